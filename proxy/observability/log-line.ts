import { pino, type Logger, type DestinationStream } from 'pino';
import type { AttemptRecord, RequestRecord } from './request-record.ts';

// One JSON line per request, written asynchronously (pino's sonic-boom) so logging stays
// off the response's critical path. Only known fields are logged — never headers or bodies
// (a test scans the log for secrets) — so no per-line redaction pass is needed; lines are
// buffered (16 KiB or 1 s, whichever first) so one write(2) carries ~30 of them.

/** ISO timestamps are costly to format per line; one string per second is enough. */
let isoSecond = 0;
let isoPrefix = '';
// The line's millisecond suffixes, `.000Z"` to `.999Z"`, made once.
const MILLIS = Array.from({ length: 1000 }, (_, ms) => `.${String(ms).padStart(3, '0')}Z"`);
function cachedIsoTime(): string {
  return isoPrefix + MILLIS[isoMillis(Date.now())];
}

/** Brings isoPrefix to `now`'s second; the millisecond within it. */
function isoMillis(now: number): number {
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 19)}`;
  }
  return now - second * 1000;
}

export interface LoggerOptions {
  level?: string;
  /** A file path, or a stream (tests); default stdout. */
  destination?: string | DestinationStream;
}

export function createGatewayLogger(options: LoggerOptions = {}): Logger {
  let destination: DestinationStream;
  if (typeof options.destination === 'object') {
    destination = options.destination;
  } else {
    // Bounded: when the disk cannot keep up, lines beyond 16 MiB pending are dropped.
    // minLength 1, not 0: with 0, sonic-boom's flush(cb) answers before the pending writes.
    // Bytes, not strings: the batch hands over bytes it encoded once (in utf8 mode sonic-boom
    // measured each string twice and encoded it twice more, for fs.write and after it).
    const boom = pino.destination({ dest: options.destination ?? 1, sync: false, mkdir: true, minLength: 1, maxWrite: 65_536, maxLength: 16 * 1024 * 1024, contentMode: 'buffer' });
    const batch = new LineBatch(boom, 16_384);
    setInterval(() => batch.drain(), 1000).unref();
    destination = batch;
  }
  return pino({ level: options.level ?? 'info', base: undefined, timestamp: cachedIsoTime }, destination);
}

type SonicBoom = ReturnType<typeof pino.destination>;

/**
 * A line's bytes, put together in place: request lines are written here field by field, with
 * no intermediate strings (the batch's own buffer, or a scratch one for other destinations).
 */
class LineBytes {
  buffer: Buffer;
  at = 0;

  constructor(capacity: number) {
    this.buffer = Buffer.allocUnsafeSlow(capacity);
  }

  /** Room for `bytes` more: a line never splits across buffers, so a long one grows it. */
  room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(2 * this.buffer.length, this.at + bytes));
    this.buffer.copy(bigger, 0, 0, this.at);
    this.buffer = bigger;
  }

  /** Text known to be ASCII: field names, numbers. */
  ascii(text: string): void {
    const length = text.length;
    this.room(length);
    const buffer = this.buffer;
    let at = this.at;
    for (let index = 0; index < length; index++) buffer[at++] = text.charCodeAt(index);
    this.at = at;
  }

  /** Any text, as UTF-8 (at most 3 bytes a UTF-16 unit). */
  utf8(text: string): void {
    this.room(3 * text.length);
    this.at += this.buffer.write(text, this.at, 'utf8');
  }

  /** `value` as a JSON string: copied as it is when nothing needs escaping (the rule), else JSON.stringify's. */
  json(value: string): void {
    const length = value.length;
    this.room(length + 2);
    const buffer = this.buffer;
    let at = this.at;
    buffer[at++] = 0x22;
    for (let index = 0; index < length; index++) {
      const code = value.charCodeAt(index);
      if (code < 0x20 || code === 0x22 || code === 0x5c || code > 0x7f) return this.utf8(JSON.stringify(value));
      buffer[at++] = code;
    }
    buffer[at++] = 0x22;
    this.at = at;
  }
}

/**
 * Gathers lines as bytes until `minBytes`, then hands them to sonic-boom in one write (one
 * write(2) carries ~30 request lines). Each handed-over buffer is sonic-boom's from then on.
 */
class LineBatch implements DestinationStream {
  readonly #boom: SonicBoom;
  readonly #minBytes: number;
  readonly bytes: LineBytes;

  constructor(boom: SonicBoom, minBytes: number) {
    this.#boom = boom;
    this.#minBytes = minBytes;
    this.bytes = new LineBytes(minBytes + 8192);
  }

  /** pino's own lines (warnings, errors…). */
  write(line: string): void {
    this.bytes.utf8(line);
    this.lineEnded();
  }

  lineEnded(): void {
    if (this.bytes.at >= this.#minBytes) this.drain();
  }

  flush(callback?: (error?: Error) => void): void {
    this.drain();
    this.#boom.flush(callback);
  }

  flushSync(): void {
    this.drain();
    this.#boom.flushSync();
  }

  /** Hands what is pending to sonic-boom (which writes it at once). */
  drain(): void {
    const bytes = this.bytes;
    if (bytes.at === 0) return;
    const full = bytes.buffer.subarray(0, bytes.at);
    bytes.buffer = Buffer.allocUnsafeSlow(this.#minBytes + 8192);
    bytes.at = 0;
    // contentMode 'buffer': sonic-boom's write takes bytes (its types say string).
    (this.#boom.write as unknown as (data: Buffer) => boolean).call(this.#boom, full);
  }
}

// Request lines for a destination that is not a LineBatch (tests' streams): built here, then one string.
const scratch = new LineBytes(4096);

/** The request's log line, from the same record the request log store keeps. */
export function logRequest(logger: Logger, record: RequestRecord, clientAborted: boolean): void {
  if (!logger.isLevelEnabled('info')) return;
  const stream = (logger as unknown as Record<symbol, DestinationStream | undefined>)[pino.symbols.streamSym];
  if (stream === undefined) return;
  const batch = stream instanceof LineBatch ? stream : undefined;
  const out = batch === undefined ? scratch : batch.bytes;
  const start = out.at;
  try {
    writeLine(out, record, clientAborted);
  } catch (error) {
    out.at = start; // no half line left behind
    throw error;
  }
  if (batch !== undefined) return batch.lineEnded();
  const line = out.buffer.toString('utf8', 0, out.at);
  out.at = 0;
  if (out.buffer.length > 65_536) out.buffer = Buffer.allocUnsafeSlow(4096);
  stream.write(line);
}

/**
 * The line's shape is fixed, so it is written here in one pass, straight to bytes (pino's
 * generic serialiser cost ≈ 10 µs a request; building it as strings, ≈ 2 KiB of them) — the
 * same JSON pino writes: level, time, the fields that are set, msg.
 */
function writeLine(out: LineBytes, record: RequestRecord, clientAborted: boolean): void {
  const millis = isoMillis(Date.now());
  out.ascii('{"level":30');
  out.ascii(isoPrefix);
  out.ascii(MILLIS[millis] as string);
  text(out, ',"trace_id":', record.traceId);
  text(out, ',"method":', record.method);
  text(out, ',"route":', record.route);
  out.ascii(',"status":');
  out.ascii(String(record.status));
  out.ascii(',"latency_ms":');
  millisecondsTo(out, record.latencyMs);
  text(out, ',"api_key_id":', record.apiKeyId);
  text(out, ',"workspace":', record.workspace);
  text(out, ',"config_id":', record.configId);
  text(out, ',"provider":', record.provider);
  text(out, ',"model":', record.model);
  text(out, ',"target":', record.targetPath);
  if (record.modelRequested !== record.model) text(out, ',"model_requested":', record.modelRequested);
  out.ascii(',"retries":');
  out.ascii(String(record.retries));
  if (record.ttftMs !== undefined) {
    out.ascii(',"ttft_ms":');
    millisecondsTo(out, record.ttftMs);
  }
  count(out, ',"prompt_tokens":', record.promptTokens);
  count(out, ',"completion_tokens":', record.completionTokens);
  count(out, ',"total_tokens":', record.totalTokens);
  count(out, ',"cached_tokens":', record.cachedTokens);
  count(out, ',"reasoning_tokens":', record.reasoningTokens);
  if (record.usageEstimated !== undefined) out.ascii(record.usageEstimated ? ',"usage_estimated":true' : ',"usage_estimated":false');
  count(out, ',"cost_usd":', record.costUsd);
  text(out, ',"otel_trace_id":', record.otelTraceId);
  text(out, ',"cache_status":', record.cacheStatus);
  text(out, ',"guardrail_verdict":', record.guardrailVerdict);
  if (record.metadata !== undefined) {
    out.ascii(',"metadata":');
    out.utf8(JSON.stringify(record.metadata));
  }
  text(out, ',"error_code":', record.errorCode);
  // The walk's story when there is one to tell: a fallback, a retry or a skipped target.
  const attempts = record.attempts;
  if (attempts !== undefined && (attempts.length > 1 || attempts[0]?.skipped !== undefined)) {
    out.ascii(',"attempts":');
    out.utf8(JSON.stringify(attempts.map(attemptJson)));
  }
  if (clientAborted) out.ascii(',"client_aborted":true');
  out.ascii(',"msg":"request"}\n');
}

function attemptJson(attempt: AttemptRecord): object {
  const { durationMs, errorCode, ...rest } = attempt;
  return { ...rest, duration_ms: Math.round(durationMs * 1000) / 1000, error_code: errorCode };
}

// ".001" … ".999", and "" for a whole number: the decimals Number#toString prints for thousandths.
const THOUSANDTHS = Array.from({ length: 1000 }, (_, n) => (n === 0 ? '' : `.${String(n).padStart(3, '0')}`.replace(/0+$/, '')));

/**
 * Math.round(ms * 1000) / 1000 as Number#toString prints it, without formatting a double (the
 * line's costliest field): below 10¹² thousandths a double's spacing is far under 0.0005, so
 * the three-decimal text is the shortest that reads back as the same number.
 */
function millisecondsTo(out: LineBytes, ms: number): void {
  const thousandths = Math.round(ms * 1000);
  if (!(thousandths >= 0 && thousandths < 1e12)) return out.ascii(String(thousandths / 1000));
  const whole = Math.floor(thousandths / 1000);
  out.ascii(String(whole));
  out.ascii(THOUSANDTHS[thousandths - whole * 1000] as string);
}

/** A string field when set; `name` is its `,"name":` prefix. */
function text(out: LineBytes, name: string, value: string | undefined): void {
  if (value === undefined) return;
  out.ascii(name);
  // A value that is not a string after all is written as before: whatever JSON.stringify makes of it.
  if (typeof value === 'string') out.json(value);
  else out.utf8(String(JSON.stringify(value)));
}

/** A number field when set; NaN and ±Infinity become null, as in JSON.stringify. */
function count(out: LineBytes, name: string, value: number | undefined): void {
  if (value === undefined) return;
  out.ascii(name);
  out.ascii(Number.isFinite(value) ? String(value) : 'null');
}
