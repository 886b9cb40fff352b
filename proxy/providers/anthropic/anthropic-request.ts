import { GatewayError } from '../../errors.ts';
import {
  DEFAULT_MAX_TOKENS,
  isRecord,
  type AnthropicContentBlock,
  type AnthropicImageBlock,
  type AnthropicMessage,
  type AnthropicMessagesRequest,
  type AnthropicTextBlock,
  type AnthropicTool,
  type AnthropicToolChoice,
  type AnthropicToolResultBlock,
  type AnthropicToolUseBlock,
} from './anthropic-wire.ts';

// Chat completions request → Anthropic Messages request. Pure. System and developer
// messages become the top-level `system`; tool messages become user `tool_result` blocks;
// adjacent turns of one role are merged (tool results of one turn must share a message).
// OpenAI-only knobs Anthropic lacks (frequency/presence penalty, logit_bias, seed,
// logprobs, response_format) are dropped; what cannot be expressed is a 400 naming the field.

const IMAGE_MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * @example
 * toAnthropicRequest({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hi' }] })
 * // → { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4096 }
 */
export function toAnthropicRequest(body: Record<string, unknown>): AnthropicMessagesRequest {
  const n = body['n'];
  if (typeof n === 'number' && n > 1) throw invalid('n', 'anthropic returns one choice; n must be 1.');
  const system: AnthropicTextBlock[] = [];
  const messages: AnthropicMessage[] = [];
  const input = Array.isArray(body['messages']) ? body['messages'] : [];
  input.forEach((message: unknown, index) => {
    const path = `messages[${index}]`;
    if (!isRecord(message)) throw invalid(path, 'must be an object.');
    switch (message['role']) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(message['content'], `${path}.content`));
        break;
      case 'user':
        appendTurn(messages, { role: 'user', content: userContent(message['content'], `${path}.content`) });
        break;
      case 'assistant':
        appendTurn(messages, { role: 'assistant', content: assistantContent(message, path) });
        break;
      case 'tool':
        appendTurn(messages, { role: 'user', content: [toolResult(message, path)] });
        break;
      default:
        throw invalid(`${path}.role`, `role "${String(message['role'])}" is not supported by anthropic; use tool messages.`);
    }
  });

  const request: AnthropicMessagesRequest = {
    model: String(body['model']),
    messages,
    max_tokens: maxTokens(body),
  };
  if (system.length === 1 && system[0] !== undefined) request.system = system[0].text;
  else if (system.length > 1) request.system = system;
  const stop = stopSequences(body['stop']);
  if (stop !== undefined) request.stop_sequences = stop;
  if (typeof body['temperature'] === 'number') request.temperature = body['temperature'];
  if (typeof body['top_p'] === 'number') request.top_p = body['top_p'];
  if (body['stream'] === true) request.stream = true;
  const tools = toolsOf(body['tools']);
  if (tools.length > 0) {
    request.tools = tools;
    const choice = toolChoiceOf(body['tool_choice'], body['parallel_tool_calls']);
    if (choice !== undefined) request.tool_choice = choice;
  }
  if (typeof body['user'] === 'string' && body['user'] !== '') request.metadata = { user_id: body['user'] };
  if (isRecord(body['thinking'])) request.thinking = body['thinking'];
  return request;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', `${param}: ${message}`, { param });
}

function maxTokens(body: Record<string, unknown>): number {
  for (const key of ['max_completion_tokens', 'max_tokens']) {
    const value = body[key];
    if (typeof value === 'number') return value;
  }
  return DEFAULT_MAX_TOKENS;
}

function stopSequences(stop: unknown): string[] | undefined {
  if (typeof stop === 'string') return [stop];
  if (Array.isArray(stop)) {
    const sequences = stop.filter((item): item is string => typeof item === 'string');
    return sequences.length > 0 ? sequences : undefined;
  }
  return undefined;
}

/** Adjacent turns of the same role are merged into one message. */
function appendTurn(messages: AnthropicMessage[], next: AnthropicMessage): void {
  const last = messages.at(-1);
  if (last === undefined || last.role !== next.role) {
    messages.push(next);
    return;
  }
  last.content = [...asBlocks(last.content), ...asBlocks(next.content)];
}

function asBlocks(content: string | AnthropicContentBlock[]): AnthropicContentBlock[] {
  if (typeof content !== 'string') return content;
  return content === '' ? [] : [{ type: 'text', text: content }];
}

function textBlocks(content: unknown, path: string): AnthropicTextBlock[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid(path, 'must be a string or an array of content parts.');
  const blocks: AnthropicTextBlock[] = [];
  content.forEach((part: unknown, index) => {
    if (!isRecord(part) || part['type'] !== 'text' || typeof part['text'] !== 'string') {
      throw invalid(`${path}[${index}]`, 'only text parts are allowed here.');
    }
    if (part['text'] !== '') blocks.push({ type: 'text', text: part['text'] });
  });
  return blocks;
}

function userContent(content: unknown, path: string): string | AnthropicContentBlock[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(path, 'must be a string or an array of content parts.');
  const blocks: AnthropicContentBlock[] = [];
  content.forEach((part: unknown, index) => {
    const partPath = `${path}[${index}]`;
    if (!isRecord(part)) throw invalid(partPath, 'must be an object.');
    switch (part['type']) {
      case 'text':
        if (typeof part['text'] !== 'string') throw invalid(`${partPath}.text`, 'must be a string.');
        if (part['text'] !== '') blocks.push({ type: 'text', text: part['text'] });
        break;
      case 'image_url':
        blocks.push(imageBlock(part['image_url'], `${partPath}.image_url`));
        break;
      case 'file':
        blocks.push(documentBlock(part['file'], `${partPath}.file`));
        break;
      default:
        throw invalid(`${partPath}.type`, `content part "${String(part['type'])}" is not supported by anthropic.`);
    }
  });
  return blocks;
}

function imageBlock(imageUrl: unknown, path: string): AnthropicImageBlock {
  const url = typeof imageUrl === 'string' ? imageUrl : isRecord(imageUrl) ? imageUrl['url'] : undefined;
  if (typeof url !== 'string') throw invalid(`${path}.url`, 'must be a string.');
  const data = parseDataUrl(url);
  if (data !== undefined) {
    if (!IMAGE_MEDIA_TYPES.has(data.mediaType)) {
      throw invalid(`${path}.url`, `image type "${data.mediaType}" is not supported by anthropic (jpeg, png, gif, webp).`);
    }
    return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  }
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw invalid(`${path}.url`, 'must be a base64 data: URL or an http(s) URL.');
}

function documentBlock(file: unknown, path: string): AnthropicContentBlock {
  const fileData = isRecord(file) ? file['file_data'] : undefined;
  const data = typeof fileData === 'string' ? parseDataUrl(fileData) : undefined;
  if (data === undefined || data.mediaType !== 'application/pdf') {
    throw invalid(`${path}.file_data`, 'anthropic accepts files as a base64 data: URL of a PDF.');
  }
  return { type: 'document', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
}

function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (match === null || match[1] === undefined || match[2] === undefined) return undefined;
  return { mediaType: match[1].toLowerCase(), data: match[2] };
}

function assistantContent(message: Record<string, unknown>, path: string): string | AnthropicContentBlock[] {
  const toolCalls = message['tool_calls'];
  const content = message['content'];
  if ((toolCalls === undefined || toolCalls === null) && typeof content === 'string') return content;
  const blocks: AnthropicContentBlock[] = [];
  if (Array.isArray(content)) {
    // Assistant parts are text or refusal; a refusal carries no text worth replaying.
    const texts = content.filter((part: unknown) => !(isRecord(part) && part['type'] === 'refusal'));
    blocks.push(...textBlocks(texts, `${path}.content`));
  } else {
    blocks.push(...textBlocks(content, `${path}.content`));
  }
  if (Array.isArray(toolCalls)) {
    toolCalls.forEach((call: unknown, index) => blocks.push(toolUse(call, `${path}.tool_calls[${index}]`)));
  }
  return blocks;
}

function toolUse(call: unknown, path: string): AnthropicToolUseBlock {
  if (!isRecord(call) || !isRecord(call['function'])) throw invalid(path, 'must be a function tool call.');
  const id = call['id'];
  const name = call['function']['name'];
  if (typeof id !== 'string') throw invalid(`${path}.id`, 'must be a string.');
  if (typeof name !== 'string') throw invalid(`${path}.function.name`, 'must be a string.');
  const args = call['function']['arguments'];
  let input: unknown = {};
  if (typeof args === 'string' && args.trim() !== '') {
    try {
      input = JSON.parse(args);
    } catch {
      throw invalid(`${path}.function.arguments`, 'must be a JSON object.');
    }
  }
  if (!isRecord(input)) throw invalid(`${path}.function.arguments`, 'must be a JSON object.');
  return { type: 'tool_use', id, name, input };
}

function toolResult(message: Record<string, unknown>, path: string): AnthropicToolResultBlock {
  const id = message['tool_call_id'];
  if (typeof id !== 'string' || id === '') throw invalid(`${path}.tool_call_id`, 'is required on tool messages.');
  const content = message['content'];
  if (typeof content === 'string') return { type: 'tool_result', tool_use_id: id, content };
  const blocks = userContent(content ?? [], `${path}.content`);
  const allowed = (typeof blocks === 'string' ? [] : blocks).filter(
    (block): block is AnthropicTextBlock | AnthropicImageBlock => block.type === 'text' || block.type === 'image',
  );
  return { type: 'tool_result', tool_use_id: id, content: allowed };
}

function toolsOf(tools: unknown): AnthropicTool[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((tool: unknown, index) => {
    const path = `tools[${index}]`;
    if (!isRecord(tool) || tool['type'] !== 'function' || !isRecord(tool['function'])) {
      throw invalid(`${path}.type`, 'anthropic supports function tools only.');
    }
    const fn = tool['function'];
    if (typeof fn['name'] !== 'string') throw invalid(`${path}.function.name`, 'must be a string.');
    const converted: AnthropicTool = {
      name: fn['name'],
      input_schema: isRecord(fn['parameters']) ? fn['parameters'] : { type: 'object', properties: {} },
    };
    if (typeof fn['description'] === 'string') converted.description = fn['description'];
    return converted;
  });
}

function toolChoiceOf(choice: unknown, parallel: unknown): AnthropicToolChoice | undefined {
  const disableParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined || choice === null || choice === 'auto') {
    return parallel === false ? { type: 'auto', ...disableParallel } : undefined;
  }
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...disableParallel };
  if (isRecord(choice) && isRecord(choice['function']) && typeof choice['function']['name'] === 'string') {
    return { type: 'tool', name: choice['function']['name'], ...disableParallel };
  }
  throw invalid('tool_choice', 'must be auto, none, required or a function choice.');
}
