import { GatewayError } from '../../errors.ts';

// Chat completions request → Gemini GenerateContentRequest (Vertex AI v1). Pure.
//   system/developer messages → systemInstruction
//   user → role "user"; assistant → role "model" (adjacent turns of one role merged)
//   image_url data URLs → inlineData; gs:// and http(s) URLs → fileData
//   assistant tool_calls → functionCall; tool messages → functionResponse (the function
//   name is looked up from the assistant turn that made the call)
//   tools → functionDeclarations; tool_choice → toolConfig.functionCallingConfig
//   temperature, top_p, max(_completion)_tokens, stop, n, penalties, seed,
//   response_format → generationConfig

type Json = Record<string, unknown>;
type Part = Json;

interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

/** The Gemini request body for a chat completions body. */
export function geminiRequest(body: Json): Json {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  const systemParts: Part[] = [];
  const contents: Content[] = [];
  const toolNames = new Map<string, string>();

  messages.forEach((raw, index) => {
    const message = asRecord(raw) ?? {};
    const at = `messages[${index}]`;
    switch (message['role']) {
      case 'system':
      case 'developer':
        systemParts.push(...textOnlyParts(message['content'], `${at}.content`));
        break;
      case 'user':
        push(contents, 'user', userParts(message['content'], `${at}.content`));
        break;
      case 'assistant':
        push(contents, 'model', assistantParts(message, at, toolNames));
        break;
      case 'tool': {
        const callId = message['tool_call_id'];
        const name = typeof callId === 'string' ? toolNames.get(callId) : undefined;
        if (name === undefined) {
          throw invalid(`${at}.tool_call_id`, 'must name a tool call made by an earlier assistant message');
        }
        push(contents, 'user', [functionResponse(name, message['content'])]);
        break;
      }
      case 'function': {
        const name = message['name'];
        if (typeof name !== 'string') throw invalid(`${at}.name`, 'Required for function messages');
        push(contents, 'user', [functionResponse(name, message['content'])]);
        break;
      }
      default:
        throw invalid(`${at}.role`, 'is not supported by vertex-ai');
    }
  });

  const request: Json = { contents };
  if (systemParts.length > 0) request['systemInstruction'] = { parts: systemParts };
  const tools = functionDeclarations(body['tools']);
  if (tools.length > 0) request['tools'] = [{ functionDeclarations: tools }];
  const toolConfig = functionCallingConfig(body['tool_choice']);
  if (toolConfig !== undefined && tools.length > 0) request['toolConfig'] = { functionCallingConfig: toolConfig };
  const generationConfig = generationConfigOf(body);
  if (Object.keys(generationConfig).length > 0) request['generationConfig'] = generationConfig;
  return request;
}

function push(contents: Content[], role: Content['role'], parts: Part[]): void {
  if (parts.length === 0) return;
  const last = contents.at(-1);
  if (last !== undefined && last.role === role) last.parts.push(...parts);
  else contents.push({ role, parts });
}

function textOnlyParts(content: unknown, at: string): Part[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw invalid(at, 'must be a string or an array of text parts');
  return content.map((item, index) => {
    const part = asRecord(item);
    if (part?.['type'] !== 'text' || typeof part['text'] !== 'string') throw invalid(`${at}[${index}]`, 'must be a text part');
    return { text: part['text'] };
  });
}

function userParts(content: unknown, at: string): Part[] {
  if (typeof content === 'string') return [{ text: content }];
  if (!Array.isArray(content)) throw invalid(at, 'must be a string or an array of content parts');
  return content.map((item, index) => contentPart(asRecord(item) ?? {}, `${at}[${index}]`));
}

function contentPart(part: Json, at: string): Part {
  switch (part['type']) {
    case 'text':
      if (typeof part['text'] !== 'string') throw invalid(`${at}.text`, 'must be a string');
      return { text: part['text'] };
    case 'image_url': {
      const image = asRecord(part['image_url']);
      const url = image?.['url'];
      if (typeof url !== 'string') throw invalid(`${at}.image_url.url`, 'Required');
      return mediaPart(url, `${at}.image_url.url`);
    }
    case 'input_audio': {
      const audio = asRecord(part['input_audio']);
      const data = audio?.['data'];
      const format = audio?.['format'];
      if (typeof data !== 'string' || typeof format !== 'string') throw invalid(`${at}.input_audio`, 'needs data and format');
      return { inlineData: { mimeType: `audio/${format}`, data } };
    }
    default:
      throw invalid(`${at}.type`, `content part type "${String(part['type'])}" is not supported by vertex-ai`);
  }
}

/** An image reference → inlineData (data URL) or fileData (Cloud Storage / web URL). */
function mediaPart(url: string, at: string): Part {
  const dataUrl = /^data:([^;,]+)((?:;[^;,]*)*),(.*)$/s.exec(url);
  if (dataUrl !== null) {
    const mimeType = dataUrl[1] ?? '';
    const isBase64 = (dataUrl[2] ?? '').split(';').includes('base64');
    const payload = dataUrl[3] ?? '';
    const data = isBase64 ? payload : Buffer.from(decodeURIComponent(payload), 'utf8').toString('base64');
    return { inlineData: { mimeType, data } };
  }
  if (/^(gs|https?):\/\//.test(url)) return { fileData: { mimeType: mimeTypeFromPath(url), fileUri: url } };
  throw invalid(at, 'must be a data: URL, a gs:// URI or an http(s) URL');
}

function mimeTypeFromPath(url: string): string {
  const extension = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  const known: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    webp: 'image/webp',
    gif: 'image/gif',
    heic: 'image/heic',
    pdf: 'application/pdf',
  };
  return (extension !== undefined ? known[extension] : undefined) ?? 'image/jpeg';
}

function assistantParts(message: Json, at: string, toolNames: Map<string, string>): Part[] {
  const parts: Part[] = [];
  const content = message['content'];
  if (typeof content === 'string') {
    if (content !== '') parts.push({ text: content });
  } else if (Array.isArray(content)) {
    content.forEach((item, index) => {
      const part = asRecord(item);
      const text = part?.['type'] === 'refusal' ? part['refusal'] : part?.['text'];
      if (typeof text !== 'string') throw invalid(`${at}.content[${index}]`, 'must be a text or refusal part');
      parts.push({ text });
    });
  }
  const toolCalls = message['tool_calls'];
  if (Array.isArray(toolCalls)) {
    toolCalls.forEach((raw, index) => {
      const call = asRecord(raw);
      const fn = asRecord(call?.['function']);
      const name = fn?.['name'];
      if (typeof name !== 'string') throw invalid(`${at}.tool_calls[${index}].function.name`, 'Required');
      if (typeof call?.['id'] === 'string') toolNames.set(call['id'], name);
      parts.push({ functionCall: { name, args: parseArguments(fn?.['arguments'], `${at}.tool_calls[${index}].function.arguments`) } });
    });
  }
  return parts;
}

function parseArguments(value: unknown, at: string): Json {
  if (value === undefined || value === '') return {};
  if (typeof value !== 'string') throw invalid(at, 'must be a JSON string');
  try {
    const parsed: unknown = JSON.parse(value);
    const record = asRecord(parsed);
    if (record === undefined) throw new Error('not an object');
    return record;
  } catch {
    throw invalid(at, 'must be a JSON object encoded as a string');
  }
}

/** A tool result: a JSON object is passed as the response; anything else as `{content}`. */
function functionResponse(name: string, content: unknown): Part {
  const text = typeof content === 'string' ? content : Array.isArray(content) ? textOf(content) : '';
  let response: Json = { content: text };
  try {
    const parsed = asRecord(JSON.parse(text));
    if (parsed !== undefined) response = parsed;
  } catch {
    // Plain text result.
  }
  return { functionResponse: { name, response } };
}

function textOf(parts: unknown[]): string {
  return parts
    .map((part) => asRecord(part)?.['text'])
    .filter((text): text is string => typeof text === 'string')
    .join('');
}

function functionDeclarations(tools: unknown): Json[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((raw, index) => {
    const tool = asRecord(raw);
    const fn = asRecord(tool?.['function']);
    const name = fn?.['name'];
    if (tool?.['type'] !== 'function' || typeof name !== 'string') {
      throw invalid(`tools[${index}]`, 'vertex-ai supports function tools only');
    }
    const declaration: Json = { name };
    if (typeof fn?.['description'] === 'string') declaration['description'] = fn['description'];
    const parameters = asRecord(fn?.['parameters']);
    if (parameters !== undefined && !isEmptyObjectSchema(parameters)) declaration['parameters'] = geminiSchema(parameters);
    return declaration;
  });
}

// Gemini's Schema is an OpenAPI subset: JSON Schema keywords it does not know are rejected.
const UNSUPPORTED_SCHEMA_KEYS = new Set(['$schema', '$id', '$comment', 'additionalProperties', 'strict']);

/** Drops JSON Schema keywords that Vertex AI's Schema type rejects. */
export function geminiSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(geminiSchema);
  const record = asRecord(schema);
  if (record === undefined) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(record)) {
    if (UNSUPPORTED_SCHEMA_KEYS.has(key)) continue;
    // Under `properties` the keys are property names, not keywords.
    out[key] = key === 'properties' && asRecord(value) !== undefined ? mapValues(asRecord(value) ?? {}, geminiSchema) : geminiSchema(value);
  }
  return out;
}

function isEmptyObjectSchema(schema: Json): boolean {
  const properties = asRecord(schema['properties']);
  return schema['type'] === 'object' && (properties === undefined || Object.keys(properties).length === 0);
}

function functionCallingConfig(choice: unknown): Json | undefined {
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'required') return { mode: 'ANY' };
  const name = asRecord(asRecord(choice)?.['function'])?.['name'];
  if (typeof name === 'string') return { mode: 'ANY', allowedFunctionNames: [name] };
  return undefined;
}

function generationConfigOf(body: Json): Json {
  const config: Json = {};
  const copy = (from: string, to: string): void => {
    const value = body[from];
    if (typeof value === 'number') config[to] = value;
  };
  copy('temperature', 'temperature');
  copy('top_p', 'topP');
  copy('presence_penalty', 'presencePenalty');
  copy('frequency_penalty', 'frequencyPenalty');
  copy('seed', 'seed');
  copy('n', 'candidateCount');
  const maxTokens = body['max_completion_tokens'] ?? body['max_tokens'];
  if (typeof maxTokens === 'number') config['maxOutputTokens'] = maxTokens;
  const stop = body['stop'];
  if (typeof stop === 'string') config['stopSequences'] = [stop];
  else if (Array.isArray(stop) && stop.length > 0) config['stopSequences'] = stop;
  const format = asRecord(body['response_format']);
  if (format?.['type'] === 'json_object') config['responseMimeType'] = 'application/json';
  if (format?.['type'] === 'json_schema') {
    config['responseMimeType'] = 'application/json';
    const schema = asRecord(format['json_schema'])?.['schema'];
    if (schema !== undefined) config['responseSchema'] = geminiSchema(schema);
  }
  return config;
}

function mapValues(record: Json, map: (value: unknown) => unknown): Json {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, map(value)]));
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', `${param}: ${message}`, { param });
}
