import { GatewayError } from '../../errors.ts';

// Chat completions request → Bedrock Converse request. Pure.
//   system/developer → system[{text}]
//   user / assistant → messages (adjacent turns of one role merged; Bedrock requires
//                      alternating turns, and tool results of one turn in one message)
//   image_url data URLs → {image:{format, source:{bytes: base64}}}; s3:// → s3Location
//   assistant tool_calls → {toolUse:{toolUseId, name, input}}
//   tool messages → user {toolResult:{toolUseId, content:[{text}]}}
//   tools / tool_choice → toolConfig; max(_completion)_tokens, temperature, top_p, stop
//   → inferenceConfig. OpenAI knobs Converse lacks (penalties, seed, logprobs,
//   response_format) are dropped; n > 1 is a 400.

type Json = Record<string, unknown>;
type Block = Json;

interface Message {
  role: 'user' | 'assistant';
  content: Block[];
}

const IMAGE_FORMATS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

export function converseRequest(body: Json): Json {
  const n = body['n'];
  if (typeof n === 'number' && n > 1) throw invalid('n', 'bedrock returns one choice; n must be 1.');
  const system: Block[] = [];
  const messages: Message[] = [];
  const input = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  input.forEach((raw, index) => {
    const message = asRecord(raw) ?? {};
    const at = `messages[${index}]`;
    switch (message['role']) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(message['content'], `${at}.content`));
        break;
      case 'user':
        push(messages, 'user', userBlocks(message['content'], `${at}.content`));
        break;
      case 'assistant':
        push(messages, 'assistant', assistantBlocks(message, at));
        break;
      case 'tool':
        push(messages, 'user', [toolResult(message, at)]);
        break;
      default:
        throw invalid(`${at}.role`, `role "${String(message['role'])}" is not supported by bedrock; use tool messages.`);
    }
  });

  const request: Json = { messages };
  if (system.length > 0) request['system'] = system;
  const inference = inferenceConfig(body);
  if (Object.keys(inference).length > 0) request['inferenceConfig'] = inference;
  const toolConfig = toolConfigOf(body['tools'], body['tool_choice'], messages);
  if (toolConfig !== undefined) request['toolConfig'] = toolConfig;
  return request;
}

function push(messages: Message[], role: Message['role'], content: Block[]): void {
  if (content.length === 0) return;
  const last = messages.at(-1);
  if (last !== undefined && last.role === role) last.content.push(...content);
  else messages.push({ role, content });
}

function textBlocks(content: unknown, at: string): Block[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw invalid(at, 'must be a string or an array of text parts.');
  return content.flatMap((item, index) => {
    const part = asRecord(item);
    const text = part?.['type'] === 'refusal' ? part['refusal'] : part?.['text'];
    if (typeof text !== 'string') throw invalid(`${at}[${index}]`, 'only text parts are allowed here.');
    return text === '' ? [] : [{ text }];
  });
}

function userBlocks(content: unknown, at: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw invalid(at, 'must be a string or an array of content parts.');
  return content.flatMap((item, index) => {
    const part = asRecord(item) ?? {};
    const partAt = `${at}[${index}]`;
    if (part['type'] === 'text') {
      if (typeof part['text'] !== 'string') throw invalid(`${partAt}.text`, 'must be a string.');
      return part['text'] === '' ? [] : [{ text: part['text'] }];
    }
    if (part['type'] === 'image_url') {
      const url = asRecord(part['image_url'])?.['url'];
      if (typeof url !== 'string') throw invalid(`${partAt}.image_url.url`, 'must be a string.');
      return [imageBlock(url, `${partAt}.image_url.url`)];
    }
    throw invalid(`${partAt}.type`, `content part "${String(part['type'])}" is not supported by bedrock.`);
  });
}

function imageBlock(url: string, at: string): Block {
  const dataUrl = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (dataUrl !== null) {
    const format = IMAGE_FORMATS[(dataUrl[1] ?? '').toLowerCase()];
    if (format === undefined) throw invalid(at, `image type "${dataUrl[1] ?? ''}" is not supported by bedrock (png, jpeg, gif, webp).`);
    return { image: { format, source: { bytes: dataUrl[2] ?? '' } } };
  }
  if (url.startsWith('s3://')) {
    const extension = /\.([a-z]+)$/i.exec(url)?.[1]?.toLowerCase() ?? '';
    const format = IMAGE_FORMATS[`image/${extension}`];
    if (format === undefined) throw invalid(at, 'an s3:// image must end in .png, .jpeg, .jpg, .gif or .webp.');
    return { image: { format, source: { s3Location: { uri: url } } } };
  }
  throw invalid(at, 'bedrock accepts images as a base64 data: URL or an s3:// URI.');
}

function assistantBlocks(message: Json, at: string): Block[] {
  const blocks = textBlocks(message['content'], `${at}.content`);
  const toolCalls = message['tool_calls'];
  if (!Array.isArray(toolCalls)) return blocks;
  toolCalls.forEach((raw, index) => {
    const callAt = `${at}.tool_calls[${index}]`;
    const call = asRecord(raw);
    const fn = asRecord(call?.['function']);
    const id = call?.['id'];
    const name = fn?.['name'];
    if (typeof id !== 'string' || id === '') throw invalid(`${callAt}.id`, 'must be a string.');
    if (typeof name !== 'string') throw invalid(`${callAt}.function.name`, 'must be a string.');
    blocks.push({ toolUse: { toolUseId: id, name, input: parseArguments(fn?.['arguments'], `${callAt}.function.arguments`) } });
  });
  return blocks;
}

function parseArguments(value: unknown, at: string): Json {
  if (value === undefined || value === '') return {};
  let parsed: unknown;
  try {
    parsed = typeof value === 'string' ? JSON.parse(value) : undefined;
  } catch {
    parsed = undefined;
  }
  const record = asRecord(parsed);
  if (record === undefined) throw invalid(at, 'must be a JSON object encoded as a string.');
  return record;
}

function toolResult(message: Json, at: string): Block {
  const id = message['tool_call_id'];
  if (typeof id !== 'string' || id === '') throw invalid(`${at}.tool_call_id`, 'is required on tool messages.');
  const content = message['content'];
  const text = typeof content === 'string' ? content : textBlocks(content, `${at}.content`).map((block) => block['text']).join('');
  // Bedrock rejects blank text blocks; an empty result is still a result.
  return { toolResult: { toolUseId: id, content: [{ text: text === '' ? ' ' : text }] } };
}

function inferenceConfig(body: Json): Json {
  const config: Json = {};
  const maxTokens = body['max_completion_tokens'] ?? body['max_tokens'];
  if (typeof maxTokens === 'number') config['maxTokens'] = maxTokens;
  if (typeof body['temperature'] === 'number') config['temperature'] = body['temperature'];
  if (typeof body['top_p'] === 'number') config['topP'] = body['top_p'];
  const stop = body['stop'];
  if (typeof stop === 'string') config['stopSequences'] = [stop];
  else if (Array.isArray(stop) && stop.length > 0) config['stopSequences'] = stop;
  return config;
}

function toolConfigOf(tools: unknown, choice: unknown, messages: Message[]): Json | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const usesTools = messages.some((message) => message.content.some((block) => 'toolUse' in block || 'toolResult' in block));
  // Converse has no "none": without tool blocks in the conversation the tools are left out;
  // with them, Bedrock requires toolConfig, so the model is left to choose (auto).
  if (choice === 'none' && !usesTools) return undefined;
  const config: Json = {
    tools: tools.map((raw, index) => {
      const fn = asRecord(asRecord(raw)?.['function']);
      const name = fn?.['name'];
      if (asRecord(raw)?.['type'] !== 'function' || typeof name !== 'string') {
        throw invalid(`tools[${index}]`, 'bedrock supports function tools only.');
      }
      const spec: Json = { name, inputSchema: { json: asRecord(fn?.['parameters']) ?? { type: 'object', properties: {} } } };
      if (typeof fn?.['description'] === 'string' && fn['description'] !== '') spec['description'] = fn['description'];
      return { toolSpec: spec };
    }),
  };
  if (choice === 'auto') config['toolChoice'] = { auto: {} };
  else if (choice === 'required') config['toolChoice'] = { any: {} };
  else {
    const name = asRecord(asRecord(choice)?.['function'])?.['name'];
    if (typeof name === 'string') config['toolChoice'] = { tool: { name } };
  }
  return config;
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', `${param}: ${message}`, { param });
}
