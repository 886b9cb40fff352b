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
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 19)}`;
  }
  return isoPrefix + MILLIS[now - second * 1000];
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
    const boom = pino.destination({ dest: options.destination ?? 1, sync: false, mkdir: true, minLength: 1, maxWrite: 65_536, maxLength: 16 * 1024 * 1024 });
    const batch = new LineBatch(boom, 16_384);
    setInterval(() => batch.drain(), 1000).unref();
    destination = batch;
  }
  return pino({ level: options.level ?? 'info', base: undefined, timestamp: cachedIsoTime }, destination);
}

type SonicBoom = ReturnType<typeof pino.destination>;

/**
 * Joins lines until `minChars`, then hands them to sonic-boom in one write: sonic-boom
 * measures its whole pending string on every write (Buffer.byteLength flattens it), which
 * line by line cost ~10 KiB of copying per request.
 */
class LineBatch implements DestinationStream {
  readonly #boom: SonicBoom;
  readonly #minChars: number;
  #lines: string[] = [];
  #chars = 0;

  constructor(boom: SonicBoom, minChars: number) {
    this.#boom = boom;
    this.#minChars = minChars;
  }

  write(line: string): void {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= this.#minChars) this.drain();
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
    if (this.#lines.length === 0) return;
    const text = this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join('');
    this.#lines = [];
    this.#chars = 0;
    this.#boom.write(text);
  }
}

/** The request's log line, from the same record the request log store keeps. */
export function logRequest(logger: Logger, record: RequestRecord, clientAborted: boolean): void {
  if (!logger.isLevelEnabled('info')) return;
  // The line's shape is fixed, so it is written here in one pass (pino's generic
  // serialiser cost ≈ 10 µs a request) — the same JSON pino writes: level, time, the
  // fields that are set, msg.
  let line = `{"level":30${cachedIsoTime()},"trace_id":${JSON.stringify(record.traceId)},"method":${JSON.stringify(record.method)}`;
  line += `,"route":${JSON.stringify(record.route)},"status":${record.status},"latency_ms":${Math.round(record.latencyMs * 1000) / 1000}`;
  line += text('api_key_id', record.apiKeyId) + text('workspace', record.workspace) + text('config_id', record.configId);
  line += text('provider', record.provider) + text('model', record.model) + text('target', record.targetPath);
  if (record.modelRequested !== record.model) line += text('model_requested', record.modelRequested);
  line += `,"retries":${record.retries}`;
  if (record.ttftMs !== undefined) line += `,"ttft_ms":${Math.round(record.ttftMs * 1000) / 1000}`;
  line += count('prompt_tokens', record.promptTokens) + count('completion_tokens', record.completionTokens);
  line += count('total_tokens', record.totalTokens) + count('cached_tokens', record.cachedTokens);
  line += count('reasoning_tokens', record.reasoningTokens);
  if (record.usageEstimated !== undefined) line += `,"usage_estimated":${record.usageEstimated}`;
  line += count('cost_usd', record.costUsd) + text('otel_trace_id', record.otelTraceId);
  line += text('cache_status', record.cacheStatus) + text('guardrail_verdict', record.guardrailVerdict);
  if (record.metadata !== undefined) line += `,"metadata":${JSON.stringify(record.metadata)}`;
  line += text('error_code', record.errorCode);
  // The walk's story when there is one to tell: a fallback, a retry or a skipped target.
  const attempts = record.attempts;
  if (attempts !== undefined && (attempts.length > 1 || attempts[0]?.skipped !== undefined)) line += `,"attempts":${JSON.stringify(attempts.map(attemptJson))}`;
  if (clientAborted) line += ',"client_aborted":true';
  (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]?.write(`${line},"msg":"request"}\n`);
}

function attemptJson(attempt: AttemptRecord): object {
  const { durationMs, errorCode, ...rest } = attempt;
  return { ...rest, duration_ms: Math.round(durationMs * 1000) / 1000, error_code: errorCode };
}

function text(name: string, value: string | undefined): string {
  return value === undefined ? '' : `,"${name}":${JSON.stringify(value)}`;
}

/** A number field; NaN and ±Infinity become null, as in JSON.stringify. */
function count(name: string, value: number | undefined): string {
  return value === undefined ? '' : `,"${name}":${Number.isFinite(value) ? value : null}`;
}
