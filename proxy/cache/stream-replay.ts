// Replays a cached (non-streaming) answer to a `stream: true` request as the SSE stream the
// provider would have sent — pure: JSON in, SSE text out.
//
// Chat completions: per choice, a role chunk, the content (and refusal) in a few pieces,
// each tool call (id + name, then its arguments in pieces) or legacy function_call, the
// annotations, then a chunk with finish_reason; a usage chunk (choices: []) when the
// request asked for stream_options.include_usage — with `usage: null` on every other chunk,
// as OpenAI does; then `data: [DONE]`. Choices are replayed one after another (a live
// stream interleaves them; any order is valid, every chunk names its choice index).
// Message fields the replay does not know (a provider's `reasoning_content`, `audio`) ride
// whole on the role chunk. Logprobs ride whole on the first content chunk.
// Completions: text_completion chunks the same way. Embeddings and responses answers are
// not replayed (embeddings have no stream; responses are not cached): replayAsSse returns
// undefined, as it does for an answer of an unexpected shape — the caller then treats the
// request as a MISS and calls the provider.
//
// The inverse — a live stream assembled into the non-streaming answer — is
// stream-assembler.ts; the tests hold the two to a round trip.

import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';

export interface ReplayOptions {
  /** stream_options.include_usage of the request being answered. */
  readonly includeUsage: boolean;
}

type Json = Record<string, unknown>;

/** Texts shorter than this go out in one piece. */
const MIN_PIECE_CHARS = 32;
/** At most about this many pieces per text, however long (bounds the replay's overhead). */
const MAX_PIECES = 64;

/**
 * The SSE stream equivalent to a cached answer, or undefined when it cannot be replayed
 * (embeddings, responses, or an answer without a `choices` array).
 * @example
 * const sse = replayAsSse('chat.completions', JSON.parse(cached.body), { includeUsage: true });
 */
export function replayAsSse(endpoint: InferenceEndpoint, answer: unknown, options: ReplayOptions): string | undefined {
  if (!isRecord(answer) || !Array.isArray(answer['choices'])) return undefined;
  const choices = answer['choices'].filter(isRecord);
  if (choices.length !== answer['choices'].length) return undefined;
  let chunks: Json[] | undefined;
  if (endpoint === 'chat.completions') chunks = chatChunks(answer, choices, options.includeUsage);
  else if (endpoint === 'completions') chunks = completionChunks(answer, choices, options.includeUsage);
  if (chunks === undefined) return undefined;
  let sse = '';
  for (const chunk of chunks) sse += `data: ${JSON.stringify(chunk)}\n\n`;
  return `${sse}data: [DONE]\n\n`;
}

function chatChunks(answer: Json, choices: Json[], includeUsage: boolean): Json[] | undefined {
  const base = envelope(answer, 'chat.completion.chunk');
  const usage = isRecord(answer['usage']) ? answer['usage'] : undefined;
  const chunks: Json[] = [];
  const push = (choice: Json): void => {
    chunks.push(includeUsage ? { ...base, choices: [choice], usage: null } : { ...base, choices: [choice] });
  };
  for (const [position, choice] of choices.entries()) {
    const index = typeof choice['index'] === 'number' ? choice['index'] : position;
    const message = choice['message'];
    if (!isRecord(message)) return undefined;
    const logprobs = choice['logprobs'] ?? null;
    let logprobsSent = logprobs === null;
    const deltaChunk = (delta: Json, finishReason: unknown = null): Json => {
      const withLogprobs = !logprobsSent && (typeof delta['content'] === 'string' || finishReason !== null);
      if (withLogprobs) logprobsSent = true;
      return { index, delta, logprobs: withLogprobs ? logprobs : null, finish_reason: finishReason };
    };

    const content = message['content'];
    const role: Json = { role: message['role'] ?? 'assistant', content: typeof content === 'string' ? '' : null, refusal: null };
    for (const [key, value] of Object.entries(message)) {
      if (!KNOWN_MESSAGE_FIELDS.has(key) && value !== null && value !== undefined) role[key] = value;
    }
    push({ index, delta: role, logprobs: null, finish_reason: null });
    if (typeof content === 'string') for (const piece of pieces(content)) push(deltaChunk({ content: piece }));
    const refusal = message['refusal'];
    if (typeof refusal === 'string') for (const piece of pieces(refusal)) push(deltaChunk({ refusal: piece }));

    const toolCalls = message['tool_calls'];
    if (Array.isArray(toolCalls)) {
      for (const [toolIndex, call] of toolCalls.entries()) {
        if (!isRecord(call)) return undefined;
        const fn = isRecord(call['function']) ? call['function'] : {};
        const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
        const head: Json = { index: toolIndex, id: call['id'], type: call['type'] ?? 'function', function: { name: fn['name'], arguments: '' } };
        push(deltaChunk({ tool_calls: [head] }));
        for (const piece of pieces(args)) push(deltaChunk({ tool_calls: [{ index: toolIndex, function: { arguments: piece } }] }));
      }
    }
    const functionCall = message['function_call'];
    if (isRecord(functionCall)) {
      const args = typeof functionCall['arguments'] === 'string' ? functionCall['arguments'] : '';
      push(deltaChunk({ function_call: { name: functionCall['name'], arguments: '' } }));
      for (const piece of pieces(args)) push(deltaChunk({ function_call: { arguments: piece } }));
    }
    const annotations = message['annotations'];
    if (Array.isArray(annotations) && annotations.length > 0) push(deltaChunk({ annotations }));
    push(deltaChunk({}, choice['finish_reason'] ?? 'stop'));
  }
  if (includeUsage && usage !== undefined) chunks.push({ ...base, choices: [], usage });
  return chunks;
}

/** Message fields chatChunks replays in their own deltas; the rest ride on the role chunk. */
const KNOWN_MESSAGE_FIELDS: ReadonlySet<string> = new Set(['role', 'content', 'refusal', 'tool_calls', 'function_call', 'annotations']);

function completionChunks(answer: Json, choices: Json[], includeUsage: boolean): Json[] {
  const base = envelope(answer, 'text_completion');
  const usage = isRecord(answer['usage']) ? answer['usage'] : undefined;
  const chunks: Json[] = [];
  for (const [position, choice] of choices.entries()) {
    const index = typeof choice['index'] === 'number' ? choice['index'] : position;
    const text = typeof choice['text'] === 'string' ? choice['text'] : '';
    for (const piece of pieces(text)) {
      chunks.push({ ...base, choices: [{ text: piece, index, logprobs: null, finish_reason: null }] });
    }
    const finish = { text: '', index, logprobs: choice['logprobs'] ?? null, finish_reason: choice['finish_reason'] ?? 'stop' };
    chunks.push({ ...base, choices: [finish] });
  }
  if (includeUsage && usage !== undefined) chunks.push({ ...base, choices: [], usage });
  return chunks;
}

/** The answer's top-level fields (id, created, model, system_fingerprint…) under the chunk `object`. */
function envelope(answer: Json, object: string): Json {
  const base: Json = {};
  for (const [key, value] of Object.entries(answer)) {
    if (key !== 'choices' && key !== 'usage' && key !== 'object') base[key] = value;
  }
  // `object` right after `id`, as OpenAI orders it (cosmetic: readers do not care).
  return { id: base['id'], object, ...base };
}

/**
 * Splits text into pieces whose concatenation is exactly the text: cut after whitespace
 * once a piece is long enough, never inside a surrogate pair; at most about MAX_PIECES.
 */
export function pieces(text: string): string[] {
  if (text.length <= MIN_PIECE_CHARS) return text === '' ? [] : [text];
  const target = Math.max(MIN_PIECE_CHARS, Math.ceil(text.length / MAX_PIECES));
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = start + target;
    if (end >= text.length) {
      out.push(text.slice(start));
      break;
    }
    // Prefer a cut after whitespace within the next `target` characters.
    const limit = Math.min(text.length, end + target);
    while (end < limit && !isWhitespace(text.charCodeAt(end - 1))) end++;
    if (end === limit && limit < text.length) end = start + target;
    // Never split a surrogate pair.
    if (isHighSurrogate(text.charCodeAt(end - 1))) end++;
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
