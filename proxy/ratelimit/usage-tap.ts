import { Transform, type TransformCallback } from 'node:stream';
import { SseFrameSplitter } from '../providers/sse-parser.ts';

// Reads the provider's token usage from an answer on its way to the client, without
// holding it back: SSE streams are cut at frame boundaries and each frame is forwarded as
// soon as it is whole (plain answers are parsed by the relay, which reads them whole).
// When the gateway asked for usage the client did not (stream_options.include_usage),
// the usage-only chunk is dropped so the client sees the stream it asked for.

export interface AnswerUsage {
  readonly prompt: number | undefined;
  readonly completion: number | undefined;
  readonly total: number | undefined;
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
  return { prompt, completion, total };
}

function numberOr(value: unknown, fallback: unknown): number | undefined {
  if (typeof value === 'number') return value;
  return typeof fallback === 'number' ? fallback : undefined;
}

/** An SSE pass-through that reports usage and optionally drops the usage-only chunk. */
export class SseUsageTap extends Transform {
  // The shared splitter: linear scan, one event capped (an oversize one fails the stream).
  readonly #frames = new SseFrameSplitter();
  readonly #strip: boolean;
  readonly #onUsage: (usage: AnswerUsage) => void;

  constructor(strip: boolean, onUsage: (usage: AnswerUsage) => void) {
    super();
    this.#strip = strip;
    this.#onUsage = onUsage;
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
    if (!dispatch || data === '' || data === '[DONE]' || !data.includes('usage')) return raw;
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      return raw;
    }
    const usage = usageOf(payload);
    if (usage === undefined) return raw;
    this.#onUsage(usage);
    const choices = (payload as { choices?: unknown }).choices;
    return this.#strip && Array.isArray(choices) && choices.length === 0 ? '' : raw;
  }
}
