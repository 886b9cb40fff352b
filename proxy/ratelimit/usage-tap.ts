import { Transform, type TransformCallback } from 'node:stream';
import { SseFrameSplitter } from '../providers/sse-parser.ts';

// Reads the provider's token usage from an answer on its way to the client, without
// holding it back: SSE streams are cut at frame boundaries and each frame is forwarded as
// soon as it is whole (plain answers are parsed by the relay, which reads them whole).
// When the gateway asked for usage the client did not (stream_options.include_usage),
// the usage-only chunk is dropped and the `"usage":null` the provider then adds to every
// chunk is cut, so the client sees byte for byte the stream it asked for.

export interface AnswerUsage {
  readonly prompt: number | undefined;
  readonly completion: number | undefined;
  readonly total: number | undefined;
  /** Prompt tokens read from the provider's prompt cache (OpenAI cached_tokens, Anthropic cache_read_input_tokens). */
  readonly cachedPrompt?: number | undefined;
  /** Prompt tokens written to the provider's prompt cache (Anthropic cache_creation_input_tokens). */
  readonly cacheWrite?: number | undefined;
  /** Completion tokens spent on reasoning. */
  readonly reasoning?: number | undefined;
}

/** The usage of an OpenAI-shaped answer or stream event (chat, completions, embeddings, responses). */
export function usageOf(payload: unknown): AnswerUsage | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const record = payload as Record<string, unknown>;
  const nested = record['response'];
  const usage = (record['usage'] ?? (typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>)['usage'] : undefined)) as
    | Record<string, unknown>
    | null
    | undefined;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const prompt = numberOr(usage['prompt_tokens'], usage['input_tokens']);
  const completion = numberOr(usage['completion_tokens'], usage['output_tokens']);
  const total = numberOr(usage['total_tokens'], prompt === undefined && completion === undefined ? undefined : (prompt ?? 0) + (completion ?? 0));
  const promptDetails = detailsOf(usage['prompt_tokens_details'] ?? usage['input_tokens_details']);
  const completionDetails = detailsOf(usage['completion_tokens_details'] ?? usage['output_tokens_details']);
  const cachedPrompt = numberOr(promptDetails?.['cached_tokens'], usage['cache_read_input_tokens']);
  const cacheWrite = numberOr(usage['cache_creation_input_tokens'], undefined);
  const reasoning = numberOr(completionDetails?.['reasoning_tokens'], undefined);
  if (cachedPrompt === undefined && cacheWrite === undefined && reasoning === undefined) return { prompt, completion, total };
  return { prompt, completion, total, cachedPrompt, cacheWrite, reasoning };
}

function detailsOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

/** The model an answer or stream event names, when it names one. */
export function modelOf(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const record = payload as Record<string, unknown>;
  const nested = record['response'];
  const model = record['model'] ?? (typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>)['model'] : undefined);
  return typeof model === 'string' && model.length <= 256 ? model : undefined;
}

/** What the tap tells its owner: the usage, the model it names, and how many content events passed. */
export interface UsageTapSink {
  onUsage(usage: AnswerUsage, model: string | undefined): void;
  /** Counted for the estimate when the client leaves before the provider's usage. */
  streamEvents: number;
  /** The stream's `data: [DONE]` passed: a client may close now, the answer is whole. */
  onDone?(): void;
}

const USAGE_NULL = /,\s*"usage"\s*:\s*null/;

function numberOr(value: unknown, fallback: unknown): number | undefined {
  if (typeof value === 'number') return value;
  return typeof fallback === 'number' ? fallback : undefined;
}

/** An SSE pass-through that reports usage and optionally drops the usage-only chunk. */
export class SseUsageTap extends Transform {
  // The shared splitter: linear scan, one event capped (an oversize one fails the stream).
  readonly #frames = new SseFrameSplitter();
  readonly #strip: boolean;
  readonly #sink: UsageTapSink;

  constructor(strip: boolean, sink: UsageTapSink) {
    super();
    this.#strip = strip;
    this.#sink = sink;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#forward(() => this.#frames.push(chunk), callback);
  }

  override _flush(callback: TransformCallback): void {
    this.#forward(() => this.#frames.end(), callback);
  }

  #forward(read: () => ReturnType<SseFrameSplitter['push']>, callback: TransformCallback): void {
    let out = '';
    try {
      for (const frame of read()) out += this.#frame(frame.raw, frame.data, frame.dispatch);
    } catch (error) {
      callback(error as Error);
      return;
    }
    callback(null, out === '' ? undefined : out);
  }

  /** Returns the frame to forward ('' to drop it). */
  #frame(raw: string, data: string, dispatch: boolean): string {
    if (!dispatch || data === '') return raw;
    if (data === '[DONE]') {
      this.#sink.onDone?.();
      return raw;
    }
    if (!data.includes('usage')) {
      this.#sink.streamEvents++;
      return raw;
    }
    // The provider marks every chunk but the last `"usage":null` once asked: no parse needed,
    // and cut when it was the gateway that asked.
    const compact = raw.lastIndexOf(',"usage":null');
    if (compact !== -1) {
      this.#sink.streamEvents++;
      return this.#strip ? raw.slice(0, compact) + raw.slice(compact + 13) : raw;
    }
    if (data.includes('null') && USAGE_NULL.test(data)) {
      this.#sink.streamEvents++;
      return this.#strip ? raw.replace(USAGE_NULL, '') : raw;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      return raw;
    }
    const usage = usageOf(payload);
    if (usage === undefined) {
      this.#sink.streamEvents++;
      return raw;
    }
    this.#sink.onUsage(usage, modelOf(payload));
    const choices = (payload as { choices?: unknown }).choices;
    return this.#strip && Array.isArray(choices) && choices.length === 0 ? '' : raw;
  }
}
