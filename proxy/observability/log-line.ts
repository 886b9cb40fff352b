import { pino, type Logger, type DestinationStream } from 'pino';
import type { AttemptRecord, RequestRecord } from './request-record.ts';

// One JSON line per request, written asynchronously (pino's sonic-boom) so logging stays
// off the response's critical path. Only known fields are logged — never headers or bodies
// (a test scans the log for secrets) — so no per-line redaction pass is needed; lines are
// buffered (56 KiB or 1 s, whichever first) so one write(2) carries ~130 of them (a write's
// CPU, the serving thread's and the thread pool's, is ≈ 2 µs a KiB at 16 KiB, ≈ 1 at 64).

/** ISO timestamps are costly to format per line; one string per second is enough. */
let isoSecond = 0;
let isoPrefix = '';
// A request line's start up to the second, as bytes: `{"level":30,"time":"…T12:34:56`.
let lineHead: Uint8Array = new Uint8Array(0);
// The line's millisecond suffixes, `.000Z"` to `.999Z"`, made once (and as bytes).
const MILLIS = Array.from({ length: 1000 }, (_, ms) => `.${String(ms).padStart(3, '0')}Z"`);
const MILLIS_BYTES = MILLIS.map(latin1);

function latin1(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'latin1'));
}
function cachedIsoTime(): string {
  return isoPrefix + MILLIS[isoMillis(Date.now())];
}

/** Brings isoPrefix to `now`'s second; the millisecond within it. */
function isoMillis(now: number): number {
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 19)}`;
    lineHead = latin1(`{"level":30${isoPrefix}`);
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
    // 56 KiB and room for a line: buffers of 64 KiB, sonic-boom's maxWrite.
    const batch = new LineBatch(boom, 57_344);
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

  /** Bytes made once (field names, runs of fields that repeat): one copy, not a loop. */
  bytes(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.buffer.set(bytes, this.at);
    this.at += bytes.length;
  }

  /** Text known to be ASCII: numbers. */
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
 * same JSON pino writes: level, time, the fields that are set, msg. Field names are copied as
 * bytes made once, and so are the runs of fields that repeat from request to request (method
 * and route; key, config, provider, model and target): a byte-by-byte loop costs ≈ 1 ns a byte.
 */
function writeLine(out: LineBytes, record: RequestRecord, clientAborted: boolean): void {
  const millis = isoMillis(Date.now());
  out.bytes(lineHead);
  out.bytes(MILLIS_BYTES[millis] as Uint8Array);
  text(out, N.traceId, record.traceId);
  routeRun(out, record.method, record.route);
  out.ascii(String(record.status));
  out.bytes(N.latencyMs);
  millisecondsTo(out, record.latencyMs);
  targetRun(out, record);
  out.ascii(String(record.retries));
  if (record.ttftMs !== undefined) {
    out.bytes(N.ttftMs);
    millisecondsTo(out, record.ttftMs);
  }
  count(out, N.promptTokens, record.promptTokens);
  count(out, N.completionTokens, record.completionTokens);
  count(out, N.totalTokens, record.totalTokens);
  count(out, N.cachedTokens, record.cachedTokens);
  count(out, N.reasoningTokens, record.reasoningTokens);
  if (record.usageEstimated !== undefined) out.bytes(record.usageEstimated ? N.estimatedTrue : N.estimatedFalse);
  count(out, N.costUsd, record.costUsd);
  text(out, N.otelTraceId, record.otelTraceId);
  text(out, N.cacheStatus, record.cacheStatus);
  text(out, N.guardrailVerdict, record.guardrailVerdict);
  if (record.metadata !== undefined) {
    out.bytes(N.metadata);
    out.utf8(JSON.stringify(record.metadata));
  }
  text(out, N.errorCode, record.errorCode);
  // The walk's story when there is one to tell: a fallback, a retry or a skipped target.
  const attempts = record.attempts;
  if (attempts !== undefined && (attempts.length > 1 || attempts[0]?.skipped !== undefined)) {
    out.bytes(N.attempts);
    out.utf8(JSON.stringify(attempts.map(attemptJson)));
  }
  if (clientAborted) out.bytes(N.clientAborted);
  out.bytes(N.end);
}

// Field names with their `,"…":`, as bytes.
const N = {
  traceId: latin1(',"trace_id":'),
  method: latin1(',"method":'),
  route: latin1(',"route":'),
  status: latin1(',"status":'),
  latencyMs: latin1(',"latency_ms":'),
  apiKeyId: latin1(',"api_key_id":'),
  workspace: latin1(',"workspace":'),
  configId: latin1(',"config_id":'),
  provider: latin1(',"provider":'),
  model: latin1(',"model":'),
  target: latin1(',"target":'),
  modelRequested: latin1(',"model_requested":'),
  retries: latin1(',"retries":'),
  ttftMs: latin1(',"ttft_ms":'),
  promptTokens: latin1(',"prompt_tokens":'),
  completionTokens: latin1(',"completion_tokens":'),
  totalTokens: latin1(',"total_tokens":'),
  cachedTokens: latin1(',"cached_tokens":'),
  reasoningTokens: latin1(',"reasoning_tokens":'),
  estimatedTrue: latin1(',"usage_estimated":true'),
  estimatedFalse: latin1(',"usage_estimated":false'),
  costUsd: latin1(',"cost_usd":'),
  otelTraceId: latin1(',"otel_trace_id":'),
  cacheStatus: latin1(',"cache_status":'),
  guardrailVerdict: latin1(',"guardrail_verdict":'),
  metadata: latin1(',"metadata":'),
  errorCode: latin1(',"error_code":'),
  attempts: latin1(',"attempts":'),
  clientAborted: latin1(',"client_aborted":true'),
  end: latin1(',"msg":"request"}\n'),
};

// The runs' bytes, kept by their values (bounded: values come from requests; past the bound
// the cache starts over). A run longer than MAX_RUN_BYTES is written each time.
const MAX_RUNS = 1024;
const MAX_RUN_BYTES = 512;
const routeRuns = new Map<string, Map<string, Uint8Array>>();
let routeRunCount = 0;

/** `,"method":…,"route":…,"status":`. */
function routeRun(out: LineBytes, method: string, route: string): void {
  const byRoute = routeRuns.get(method);
  const kept = byRoute?.get(route);
  if (kept !== undefined) return out.bytes(kept);
  const start = out.at;
  text(out, N.method, method);
  text(out, N.route, route);
  out.bytes(N.status);
  // Only strings are kept: another value's JSON could differ from one call to the next.
  if (typeof method !== 'string' || typeof route !== 'string' || out.at - start > MAX_RUN_BYTES) return;
  if (routeRunCount >= MAX_RUNS) {
    routeRuns.clear();
    routeRunCount = 0;
  }
  routeRunCount++;
  const run = copyOf(out, start);
  const now = routeRuns.get(method);
  if (now === undefined) routeRuns.set(method, new Map([[route, run]]));
  else now.set(route, run);
}

interface TargetRun {
  readonly workspace: string | undefined;
  readonly configId: string | undefined;
  readonly provider: string | undefined;
  readonly model: string | undefined;
  readonly targetPath: string | undefined;
  readonly modelRequested: string | undefined;
  readonly bytes: Uint8Array;
}

// API key id → the runs seen with it (a few: its configs, models, targets), newest last.
const targetRuns = new Map<string | undefined, TargetRun[]>();
let targetRunCount = 0;
const RUNS_PER_KEY = 8;

/** `,"api_key_id":…,"workspace":…,"config_id":…,"provider":…,"model":…,"target":…[,"model_requested":…],"retries":`. */
function targetRun(out: LineBytes, record: RequestRecord): void {
  const { apiKeyId, workspace, configId, provider, model, targetPath, modelRequested } = record;
  const runs = targetRuns.get(apiKeyId);
  if (runs !== undefined) {
    for (let index = runs.length - 1; index >= 0; index--) {
      const run = runs[index] as TargetRun;
      if (run.model === model && run.targetPath === targetPath && run.configId === configId && run.provider === provider && run.modelRequested === modelRequested && run.workspace === workspace) {
        return out.bytes(run.bytes);
      }
    }
  }
  const start = out.at;
  text(out, N.apiKeyId, apiKeyId);
  text(out, N.workspace, workspace);
  text(out, N.configId, configId);
  text(out, N.provider, provider);
  text(out, N.model, model);
  text(out, N.target, targetPath);
  if (modelRequested !== model) text(out, N.modelRequested, modelRequested);
  out.bytes(N.retries);
  if (out.at - start > MAX_RUN_BYTES || !stringsOrUndefined(apiKeyId, workspace, configId, provider, model, targetPath, modelRequested)) return;
  if (targetRunCount >= MAX_RUNS) {
    targetRuns.clear();
    targetRunCount = 0;
  }
  targetRunCount++;
  const run: TargetRun = { workspace, configId, provider, model, targetPath, modelRequested, bytes: copyOf(out, start) };
  let kept = targetRuns.get(apiKeyId);
  if (kept === undefined) targetRuns.set(apiKeyId, (kept = []));
  else if (kept.length >= RUNS_PER_KEY) kept.shift();
  kept.push(run);
}

/** The bytes written since `start`, copied (the batch's buffer goes to sonic-boom). */
function copyOf(out: LineBytes, start: number): Uint8Array {
  return new Uint8Array(out.buffer.subarray(start, out.at));
}

function stringsOrUndefined(...values: unknown[]): boolean {
  for (const value of values) if (value !== undefined && typeof value !== 'string') return false;
  return true;
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
function text(out: LineBytes, name: Uint8Array, value: string | undefined): void {
  if (value === undefined) return;
  out.bytes(name);
  // A value that is not a string after all is written as before: whatever JSON.stringify makes of it.
  if (typeof value === 'string') out.json(value);
  else out.utf8(String(JSON.stringify(value)));
}

/** A number field when set; NaN and ±Infinity become null, as in JSON.stringify. */
function count(out: LineBytes, name: Uint8Array, value: number | undefined): void {
  if (value === undefined) return;
  out.bytes(name);
  out.ascii(Number.isFinite(value) ? String(value) : 'null');
}
