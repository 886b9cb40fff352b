import { GatewayError } from '../../errors.ts';
import { isRecord } from '../../providers/anthropic/anthropic-wire.ts';

// Anthropic Messages request → OpenAI chat completions request, for targets that speak
// only the OpenAI format. Pure. `system` becomes the first message; `tool_result` blocks
// become `tool` messages placed before the rest of their user turn (OpenAI wants them
// right after the assistant's tool calls); `tool_use` blocks become tool_calls. Prompt
// caching marks (cache_control), thinking settings and thinking blocks have no OpenAI
// equivalent and are dropped; what cannot be expressed is a 400 naming the field.

type Json = Record<string, unknown>;

export function chatRequestFromMessages(body: Json): Json {
  const messages: Json[] = [];
  const system = systemText(body['system']);
  if (system !== undefined) messages.push({ role: 'system', content: system });
  const turns = Array.isArray(body['messages']) ? body['messages'] : [];
  turns.forEach((turn: unknown, index) => {
    const path = `messages[${index}]`;
    if (!isRecord(turn)) throw invalid(path, 'must be an object.');
    if (turn['role'] === 'assistant') messages.push(assistantMessage(turn['content'], `${path}.content`));
    else messages.push(...userMessages(turn['content'], `${path}.content`));
  });

  const chat: Json = { model: body['model'], messages };
  if (typeof body['max_tokens'] === 'number') chat['max_tokens'] = body['max_tokens'];
  if (typeof body['temperature'] === 'number') chat['temperature'] = body['temperature'];
  if (typeof body['top_p'] === 'number') chat['top_p'] = body['top_p'];
  if (Array.isArray(body['stop_sequences']) && body['stop_sequences'].length > 0) chat['stop'] = body['stop_sequences'];
  if (body['stream'] === true) {
    chat['stream'] = true;
    // message_delta carries the usage: the OpenAI stream reports it only when asked.
    chat['stream_options'] = { include_usage: true };
  }
  const tools = Array.isArray(body['tools']) ? body['tools'] : [];
  if (tools.length > 0) {
    chat['tools'] = tools.map((tool: unknown, index) => chatTool(tool, `tools[${index}]`));
    Object.assign(chat, toolChoiceOf(body['tool_choice']));
  }
  const metadata = body['metadata'];
  if (isRecord(metadata) && typeof metadata['user_id'] === 'string' && metadata['user_id'] !== '') chat['user'] = metadata['user_id'];
  return chat;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', `${param}: ${message}`, { param });
}

/** `system` as one string (blocks joined by blank lines); undefined when absent or empty. */
function systemText(system: unknown): string | undefined {
  if (typeof system === 'string') return system === '' ? undefined : system;
  if (!Array.isArray(system)) return undefined;
  const texts = system.map((block: unknown, index) => {
    if (!isRecord(block) || block['type'] !== 'text' || typeof block['text'] !== 'string') throw invalid(`system[${index}]`, 'must be a text block.');
    return block['text'];
  });
  return texts.length === 0 ? undefined : texts.join('\n\n');
}

function blocksOf(content: unknown, path: string): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid(path, 'must be a string or an array of content blocks.');
  return content.map((block: unknown, index) => {
    if (!isRecord(block)) throw invalid(`${path}[${index}]`, 'must be an object.');
    return block;
  });
}

/** A user turn: its tool results as `tool` messages, then the rest as one user message. */
function userMessages(content: unknown, path: string): Json[] {
  const out: Json[] = [];
  const parts: Json[] = [];
  blocksOf(content, path).forEach((block, index) => {
    const where = `${path}[${index}]`;
    switch (block['type']) {
      case 'text':
        parts.push({ type: 'text', text: String(block['text'] ?? '') });
        break;
      case 'image':
        parts.push(imagePart(block['source'], `${where}.source`));
        break;
      case 'document':
        parts.push(documentPart(block, where));
        break;
      case 'tool_result':
        out.push(toolMessage(block, where));
        break;
      default:
        throw invalid(`${where}.type`, `block type "${String(block['type'])}" cannot be sent to an OpenAI-format provider.`);
    }
  });
  if (parts.length > 0) {
    const onlyText = parts.every((part) => part['type'] === 'text');
    out.push({ role: 'user', content: onlyText ? parts.map((part) => part['text']).join('') : parts });
  }
  return out;
}

function imagePart(source: unknown, path: string): Json {
  if (!isRecord(source)) throw invalid(path, 'must be an object.');
  if (source['type'] === 'base64' && typeof source['media_type'] === 'string' && typeof source['data'] === 'string') {
    return { type: 'image_url', image_url: { url: `data:${source['media_type']};base64,${source['data']}` } };
  }
  if (source['type'] === 'url' && typeof source['url'] === 'string') return { type: 'image_url', image_url: { url: source['url'] } };
  throw invalid(`${path}.type`, 'images need a base64 or url source for an OpenAI-format provider.');
}

function documentPart(block: Json, path: string): Json {
  const source = block['source'];
  if (isRecord(source) && source['type'] === 'text' && typeof source['data'] === 'string') return { type: 'text', text: source['data'] };
  if (isRecord(source) && source['type'] === 'base64' && source['media_type'] === 'application/pdf' && typeof source['data'] === 'string') {
    const filename = typeof block['title'] === 'string' ? block['title'] : 'document.pdf';
    return { type: 'file', file: { filename, file_data: `data:application/pdf;base64,${source['data']}` } };
  }
  throw invalid(`${path}.source`, 'documents need a text or base64 PDF source for an OpenAI-format provider.');
}

function toolMessage(block: Json, path: string): Json {
  const id = block['tool_use_id'];
  if (typeof id !== 'string' || id === '') throw invalid(`${path}.tool_use_id`, 'must be a non-empty string.');
  const content = block['content'];
  let text: string;
  if (content === undefined) text = '';
  else if (typeof content === 'string') text = content;
  else text = blocksOf(content, `${path}.content`).map((part) => (part['type'] === 'text' ? String(part['text'] ?? '') : '')).join('');
  // OpenAI has no error flag on tool results; the model still needs to know it failed.
  if (block['is_error'] === true) text = `Error: ${text}`;
  return { role: 'tool', tool_call_id: id, content: text };
}

function assistantMessage(content: unknown, path: string): Json {
  let text = '';
  const toolCalls: Json[] = [];
  blocksOf(content, path).forEach((block, index) => {
    const where = `${path}[${index}]`;
    switch (block['type']) {
      case 'text':
        text += String(block['text'] ?? '');
        break;
      case 'tool_use': {
        if (typeof block['id'] !== 'string' || typeof block['name'] !== 'string') throw invalid(where, 'tool_use needs id and name.');
        toolCalls.push({ id: block['id'], type: 'function', function: { name: block['name'], arguments: JSON.stringify(block['input'] ?? {}) } });
        break;
      }
      case 'thinking':
      case 'redacted_thinking':
        break; // the provider cannot verify Anthropic's thinking signatures
      default:
        throw invalid(`${where}.type`, `block type "${String(block['type'])}" cannot be sent to an OpenAI-format provider.`);
    }
  });
  const message: Json = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text };
  if (toolCalls.length > 0) message['tool_calls'] = toolCalls;
  return message;
}

function chatTool(tool: unknown, path: string): Json {
  if (!isRecord(tool) || typeof tool['name'] !== 'string') throw invalid(path, 'must be an object with a name.');
  if (!isRecord(tool['input_schema'])) {
    throw invalid(`${path}.type`, `server tool "${tool['name']}" (${String(tool['type'])}) runs on Anthropic only; OpenAI-format providers take custom tools with input_schema.`);
  }
  const fn: Json = { name: tool['name'], parameters: tool['input_schema'] };
  if (typeof tool['description'] === 'string') fn['description'] = tool['description'];
  return { type: 'function', function: fn };
}

function toolChoiceOf(choice: unknown): Json {
  if (!isRecord(choice)) return {};
  const out: Json = {};
  switch (choice['type']) {
    case 'auto':
      out['tool_choice'] = 'auto';
      break;
    case 'any':
      out['tool_choice'] = 'required';
      break;
    case 'none':
      out['tool_choice'] = 'none';
      break;
    case 'tool':
      out['tool_choice'] = { type: 'function', function: { name: String(choice['name'] ?? '') } };
      break;
    default:
      throw invalid('tool_choice.type', 'must be auto, any, tool or none.');
  }
  if (choice['disable_parallel_tool_use'] === true) out['parallel_tool_calls'] = false;
  return out;
}
