import { PassThrough, Transform, type Readable, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

// Reads the provider's token usage from an answer on its way to the client, without
// holding it back: JSON answers are copied aside (bounded) and parsed at the end; SSE
// streams are cut at frame boundaries and each frame is forwarded as soon as it is whole.
// When the gateway asked for usage the client did not (stream_options.include_usage),
// the usage-only chunk is dropped so the client sees the stream it asked for.

const MAX_JSON_COPY = 8 * 1024 * 1024;

/** Total tokens of an OpenAI-shaped answer or stream event, if it carries usage. */
export function totalTokensOf(payload: unknown): number | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const record = payload as Record<string, unknown>;
  const usage = (record['usage'] ?? (record['response'] as Record<string, unknown> | undefined)?.['usage']) as
    | Record<string, unknown>
    | null
    | undefined;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const total = usage['total_tokens'];
  if (typeof total === 'number') return total;
  const parts = [usage['prompt_tokens'], usage['completion_tokens'], usage['input_tokens'], usage['output_tokens']];
  const sum = parts.reduce<number>((acc, part) => acc + (typeof part === 'number' ? part : 0), 0);
  return sum > 0 ? sum : undefined;
}

/** Passes a JSON answer through untouched and reports its usage at the end. */
export function tapJsonUsage(source: Readable, onUsage: (tokens: number) => void): Readable {
  const chunks: Buffer[] = [];
  let size = 0;
  const out = new PassThrough();
  source.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_JSON_COPY) chunks.push(chunk);
  });
  source.on('end', () => {
    if (size > MAX_JSON_COPY) return;
    try {
      const tokens = totalTokensOf(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      if (tokens !== undefined) onUsage(tokens);
    } catch {
      // Not JSON: nothing to count.
    }
  });
  source.on('error', (error) => out.destroy(error));
  source.pipe(out);
  return out;
}

/** An SSE pass-through that reports usage and optionally drops the usage-only chunk. */
export class SseUsageTap extends Transform {
  readonly #decoder = new StringDecoder('utf8');
  readonly #strip: boolean;
  readonly #onUsage: (tokens: number) => void;
  #pending = '';

  constructor(strip: boolean, onUsage: (tokens: number) => void) {
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
    const tokens = totalTokensOf(payload);
    if (tokens === undefined) return frame;
    this.#onUsage(tokens);
    const choices = (payload as { choices?: unknown }).choices;
    return this.#strip && Array.isArray(choices) && choices.length === 0 ? '' : frame;
  }
}
