import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

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
  readonly #decoder = new StringDecoder('utf8');
  readonly #strip: boolean;
  readonly #onUsage: (usage: AnswerUsage) => void;
  #pending = '';

  constructor(strip: boolean, onUsage: (usage: AnswerUsage) => void) {
    super();
    this.#strip = strip;
    this.#onUsage = onUsage;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#pending += this.#decoder.write(chunk);
    const boundary = /\r?\n\r?\n/g;
    let start = 0;
    let match: RegExpExecArray | null;
    let out = '';
    while ((match = boundary.exec(this.#pending)) !== null) {
      const end = match.index + match[0].length;
      out += this.#frame(this.#pending.slice(start, end));
      start = end;
    }
    this.#pending = this.#pending.slice(start);
    callback(null, out === '' ? undefined : out);
  }

  override _flush(callback: TransformCallback): void {
    const rest = this.#pending + this.#decoder.end();
    callback(null, rest === '' ? undefined : this.#frame(rest));
  }

  /** Returns the frame to forward ('' to drop it). */
  #frame(frame: string): string {
    const data = frame
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data === '' || data === '[DONE]' || !data.includes('usage')) return frame;
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      return frame;
    }
    const usage = usageOf(payload);
    if (usage === undefined) return frame;
    this.#onUsage(usage);
    const choices = (payload as { choices?: unknown }).choices;
    return this.#strip && Array.isArray(choices) && choices.length === 0 ? '' : frame;
  }
}
