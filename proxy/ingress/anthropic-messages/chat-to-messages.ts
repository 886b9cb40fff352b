import { tokenCountOr } from '../../accounting/token-count.ts';
import { isRecord } from '../../providers/anthropic/anthropic-wire.ts';
import { SseFrame, type SseEventTranslation } from '../../providers/sse-parser.ts';

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
  // Counts are hostile input: tokenCount keeps only sane ones; cached ⊂ prompt.
  const prompt = tokenCountOr(record['prompt_tokens'], 0);
  const cached = Math.min(isRecord(details) ? tokenCountOr(details['cached_tokens'], 0) : 0, prompt);
  const completion = tokenCountOr(record['completion_tokens'], 0);
  return { input_tokens: prompt - cached, output_tokens: completion, cache_creation_input_tokens: 0, cache_read_input_tokens: cached };
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

function named(event: string, payload: Json): SseFrame {
  return SseFrame.named(event, JSON.stringify(payload), payload);
}

interface OpenBlock {
  readonly index: number;
  readonly kind: 'text' | 'thinking' | 'tool_use';
  /** The OpenAI tool call index, for tool_use blocks. */
  readonly toolIndex?: number;
}

/**
 * OpenAI chat frames in, Anthropic Messages frames out: a step of the one frame pipeline (the
 * chat frames' JSON is the one parse). Content blocks open and close in order (text, then
 * each tool call); the usage chunk OpenAI sends last fills message_delta. A stream that ends
 * without a finish_reason ends with an `error` event, as Anthropic's do.
 */
export class ChatToMessagesStream implements SseEventTranslation {
  readonly #request: Json;
  #started = false;
  #ended = false;
  #nextIndex = 0;
  #open: OpenBlock | undefined;
  readonly #toolBlocks = new Map<number, number>();
  #stopReason: string | null = null;
  #usage: MessagesUsage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

  constructor(request: Json) {
    this.#request = request;
  }

  event(frame: SseFrame, out: SseFrame[]): void {
    if (this.#ended || !frame.dispatch) return;
    if (frame.data.trim() === '[DONE]') {
      this.#finish(out);
      return;
    }
    const payload = frame.json;
    if (!isRecord(payload)) return;
    if (isRecord(payload['error'])) {
      this.#ended = true;
      const message = String(payload['error']['message'] ?? 'The provider reported an error.');
      out.push(named('error', anthropicErrorBody('api_error', message)));
      return;
    }
    this.#start(payload, out);
    if (isRecord(payload['usage'])) this.#usage = messagesUsageOf(payload['usage']);
    const choices = Array.isArray(payload['choices']) ? payload['choices'] : [];
    const choice = isRecord(choices[0]) ? choices[0] : undefined;
    if (choice === undefined) return;
    const delta = isRecord(choice['delta']) ? choice['delta'] : {};
    const reasoning = delta['reasoning_content'];
    if (typeof reasoning === 'string' && reasoning !== '') {
      this.#ensure('thinking', out);
      out.push(named('content_block_delta', { type: 'content_block_delta', index: this.#open?.index, delta: { type: 'thinking_delta', thinking: reasoning } }));
    }
    const text = delta['content'];
    if (typeof text === 'string' && text !== '') {
      this.#ensure('text', out);
      out.push(named('content_block_delta', { type: 'content_block_delta', index: this.#open?.index, delta: { type: 'text_delta', text } }));
    }
    const calls = Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : [];
    for (const call of calls) if (isRecord(call)) this.#toolCall(call, out);
    if (typeof choice['finish_reason'] === 'string') this.#stopReason = stopReasonOf(choice['finish_reason']);
  }

  end(out: SseFrame[]): void {
    this.#finish(out);
  }

  #start(payload: Json, out: SseFrame[]): void {
    if (this.#started) return;
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
    out.push(named('message_start', { type: 'message_start', message }), named('ping', { type: 'ping' }));
  }

  /** Opens a block of `kind` unless one is open already. */
  #ensure(kind: 'text' | 'thinking', out: SseFrame[]): void {
    if (this.#open?.kind === kind) return;
    this.#close(out);
    const index = this.#nextIndex++;
    this.#open = { index, kind };
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    out.push(named('content_block_start', { type: 'content_block_start', index, content_block: block }));
  }

  #toolCall(call: Json, out: SseFrame[]): void {
    const toolIndex = typeof call['index'] === 'number' ? call['index'] : 0;
    const fn = isRecord(call['function']) ? call['function'] : {};
    let index = this.#toolBlocks.get(toolIndex);
    if (index === undefined) {
      this.#close(out);
      index = this.#nextIndex++;
      this.#toolBlocks.set(toolIndex, index);
      this.#open = { index, kind: 'tool_use', toolIndex };
      const block = { type: 'tool_use', id: String(call['id'] ?? `toolu_${index}`), name: String(fn['name'] ?? ''), input: {} };
      out.push(named('content_block_start', { type: 'content_block_start', index, content_block: block }));
    }
    const args = fn['arguments'];
    if (typeof args === 'string' && args !== '') {
      out.push(named('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args } }));
    }
  }

  #close(out: SseFrame[]): void {
    if (this.#open === undefined) return;
    const { index } = this.#open;
    this.#open = undefined;
    out.push(named('content_block_stop', { type: 'content_block_stop', index }));
  }

  #finish(out: SseFrame[]): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#stopReason === null) {
      out.push(named('error', anthropicErrorBody('api_error', 'The provider ended the stream before the answer was complete.')));
      return;
    }
    this.#close(out);
    out.push(
      named('message_delta', { type: 'message_delta', delta: { stop_reason: this.#stopReason, stop_sequence: null }, usage: this.#usage }),
      named('message_stop', { type: 'message_stop' }),
    );
  }
}
