import { Transform, type TransformCallback } from 'node:stream';
import { isRecord } from '../providers/anthropic/anthropic-wire.ts';
import { SseFrameSplitter } from '../providers/sse-parser.ts';

// OpenAI chat completion (plain or streamed) → Anthropic Message (plain or the named SSE
// events message_start … message_stop), for OpenAI-format targets behind /v1/messages.

type Json = Record<string, unknown>;

const STOP_REASONS: Readonly<Record<string, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

/** OpenAI finish_reason → Anthropic stop_reason. */
export function stopReasonOf(finishReason: unknown): string | null {
  if (typeof finishReason !== 'string') return null;
  return STOP_REASONS[finishReason] ?? 'end_turn';
}

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** OpenAI counts cached tokens inside prompt_tokens; Anthropic reports them apart. */
export function messagesUsageOf(usage: unknown): MessagesUsage {
  const record = isRecord(usage) ? usage : {};
  const details = record['prompt_tokens_details'];
  const cached = isRecord(details) && typeof details['cached_tokens'] === 'number' ? details['cached_tokens'] : 0;
  const prompt = typeof record['prompt_tokens'] === 'number' ? record['prompt_tokens'] : 0;
  const completion = typeof record['completion_tokens'] === 'number' ? record['completion_tokens'] : 0;
  return { input_tokens: Math.max(0, prompt - cached), output_tokens: completion, cache_creation_input_tokens: 0, cache_read_input_tokens: cached };
}

function messageId(id: unknown): string {
  const text = typeof id === 'string' && id !== '' ? id : `${Date.now().toString(36)}`;
  return text.startsWith('msg_') ? text : `msg_${text}`;
}

function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string' || text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : { value: parsed };
  } catch {
    // A model that wrote broken JSON: keep its text rather than lose it.
    return { _raw_arguments: text };
  }
}

/** A plain chat.completion as an Anthropic Message. */
export function messageFromChatCompletion(chat: unknown, request: Json): Json {
  const answer = isRecord(chat) ? chat : {};
  const choices = Array.isArray(answer['choices']) ? answer['choices'] : [];
  const choice = isRecord(choices[0]) ? choices[0] : {};
  const message = isRecord(choice['message']) ? choice['message'] : {};
  const content: Json[] = [];
  const reasoning = message['reasoning_content'];
  if (typeof reasoning === 'string' && reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const text = message['content'];
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text });
  const refusal = message['refusal'];
  if (typeof refusal === 'string' && refusal !== '') content.push({ type: 'text', text: refusal });
  const calls = Array.isArray(message['tool_calls']) ? message['tool_calls'] : [];
  for (const call of calls) {
    if (!isRecord(call) || !isRecord(call['function'])) continue;
    content.push({ type: 'tool_use', id: String(call['id'] ?? ''), name: String(call['function']['name'] ?? ''), input: parseArguments(call['function']['arguments']) });
  }
  return {
    id: messageId(answer['id']),
    type: 'message',
    role: 'assistant',
    model: typeof answer['model'] === 'string' ? answer['model'] : request['model'],
    content,
    stop_reason: stopReasonOf(choice['finish_reason']) ?? 'end_turn',
    stop_sequence: null,
    usage: messagesUsageOf(answer['usage']),
  };
}

const ERROR_TYPES: ReadonlyArray<readonly [number, string]> = [
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [402, 'billing_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [408, 'timeout_error'],
  [413, 'request_too_large'],
  [429, 'rate_limit_error'],
  [529, 'overloaded_error'],
];

/** Anthropic's error `type` for an HTTP status. */
export function anthropicErrorType(status: number): string {
  const known = ERROR_TYPES.find(([code]) => code === status)?.[1];
  if (known !== undefined) return known;
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** Anthropic's error envelope. */
export function anthropicErrorBody(type: string, message: string): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type, message } };
}

function sse(event: string, payload: Json): string {
  return `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;
}

interface OpenBlock {
  readonly index: number;
  readonly kind: 'text' | 'thinking' | 'tool_use';
  /** The OpenAI tool call index, for tool_use blocks. */
  readonly toolIndex?: number;
}

/**
 * OpenAI chat SSE in, Anthropic Messages SSE out. Content blocks open and close in order
 * (text, then each tool call); the usage chunk OpenAI sends last fills message_delta. A
 * stream that ends without a finish_reason ends with an `error` event, as Anthropic's do.
 */
export class ChatToMessagesStream extends Transform {
  readonly #frames = new SseFrameSplitter();
  readonly #request: Json;
  #started = false;
  #ended = false;
  #nextIndex = 0;
  #open: OpenBlock | undefined;
  readonly #toolBlocks = new Map<number, number>();
  #stopReason: string | null = null;
  #usage: MessagesUsage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

  constructor(request: Json) {
    super();
    this.#request = request;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#run(() => this.#frames.push(chunk), callback, false);
  }

  override _flush(callback: TransformCallback): void {
    this.#run(() => this.#frames.end(), callback, true);
  }

  #run(read: () => ReturnType<SseFrameSplitter['push']>, callback: TransformCallback, last: boolean): void {
    let out = '';
    try {
      for (const frame of read()) {
        if (!frame.dispatch || this.#ended) continue;
        out += this.#frame(frame.data);
      }
      if (last && !this.#ended) out += this.#finish();
    } catch (error) {
      callback(error as Error);
      return;
    }
    callback(null, out === '' ? undefined : out);
  }

  #frame(data: string): string {
    if (data.trim() === '[DONE]') return this.#finish();
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      return '';
    }
    if (!isRecord(payload)) return '';
    if (isRecord(payload['error'])) {
      this.#ended = true;
      const message = String(payload['error']['message'] ?? 'The provider reported an error.');
      return sse('error', anthropicErrorBody('api_error', message));
    }
    let out = this.#start(payload);
    if (isRecord(payload['usage'])) this.#usage = messagesUsageOf(payload['usage']);
    const choices = Array.isArray(payload['choices']) ? payload['choices'] : [];
    const choice = isRecord(choices[0]) ? choices[0] : undefined;
    if (choice === undefined) return out;
    const delta = isRecord(choice['delta']) ? choice['delta'] : {};
    const reasoning = delta['reasoning_content'];
    if (typeof reasoning === 'string' && reasoning !== '') {
      out += this.#ensure('thinking');
      out += sse('content_block_delta', { type: 'content_block_delta', index: this.#open?.index, delta: { type: 'thinking_delta', thinking: reasoning } });
    }
    const text = delta['content'];
    if (typeof text === 'string' && text !== '') {
      out += this.#ensure('text');
      out += sse('content_block_delta', { type: 'content_block_delta', index: this.#open?.index, delta: { type: 'text_delta', text } });
    }
    const calls = Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : [];
    for (const call of calls) if (isRecord(call)) out += this.#toolCall(call);
    if (typeof choice['finish_reason'] === 'string') this.#stopReason = stopReasonOf(choice['finish_reason']);
    return out;
  }

  #start(payload: Json): string {
    if (this.#started) return '';
    this.#started = true;
    const message = {
      id: messageId(payload['id']),
      type: 'message',
      role: 'assistant',
      model: typeof payload['model'] === 'string' ? payload['model'] : this.#request['model'],
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
    return sse('message_start', { type: 'message_start', message }) + sse('ping', { type: 'ping' });
  }

  /** Opens a block of `kind` unless one is open already. */
  #ensure(kind: 'text' | 'thinking'): string {
    if (this.#open?.kind === kind) return '';
    const out = this.#close();
    const index = this.#nextIndex++;
    this.#open = { index, kind };
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    return out + sse('content_block_start', { type: 'content_block_start', index, content_block: block });
  }

  #toolCall(call: Json): string {
    const toolIndex = typeof call['index'] === 'number' ? call['index'] : 0;
    const fn = isRecord(call['function']) ? call['function'] : {};
    let out = '';
    let index = this.#toolBlocks.get(toolIndex);
    if (index === undefined) {
      out += this.#close();
      index = this.#nextIndex++;
      this.#toolBlocks.set(toolIndex, index);
      this.#open = { index, kind: 'tool_use', toolIndex };
      const block = { type: 'tool_use', id: String(call['id'] ?? `toolu_${index}`), name: String(fn['name'] ?? ''), input: {} };
      out += sse('content_block_start', { type: 'content_block_start', index, content_block: block });
    }
    const args = fn['arguments'];
    if (typeof args === 'string' && args !== '') {
      out += sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args } });
    }
    return out;
  }

  #close(): string {
    if (this.#open === undefined) return '';
    const { index } = this.#open;
    this.#open = undefined;
    return sse('content_block_stop', { type: 'content_block_stop', index });
  }

  #finish(): string {
    if (this.#ended) return '';
    this.#ended = true;
    if (this.#stopReason === null) {
      return sse('error', anthropicErrorBody('api_error', 'The provider ended the stream before the answer was complete.'));
    }
    return (
      this.#close() +
      sse('message_delta', { type: 'message_delta', delta: { stop_reason: this.#stopReason, stop_sequence: null }, usage: this.#usage }) +
      sse('message_stop', { type: 'message_stop' })
    );
  }
}
