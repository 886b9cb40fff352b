import { Counter, Gauge, type Registry } from 'prom-client';
import type { RequestRecord, RequestRecordSink } from '../observability/request-record.ts';
import type { RequestLogStore } from './request-log-store.ts';

// Moves finished-request records from the response path to the log store: the sink only
// pushes onto an in-memory queue (O(1), never awaits, never throws); batches are written
// one at a time, when a batch is full or flushIntervalMs after a part-filled one began.
// When the store is slower than the traffic the queue fills, and further records are
// dropped and counted rather than held: memory stays bounded and requests never wait for
// the log.
//
// A batch that fails because the store is unreachable (a PostgreSQL outage: refused or
// reset connections, connect timeouts, the server shutting down) goes back to the head of
// the queue and is retried with backoff, so an outage costs records only once the queue is
// full (counted as queue_full). A batch the store refuses for what it holds is dropped and
// counted as write_failed: retrying it would block every later record.
//
//   const writer = createRequestLogWriter(store, { metrics: gatewayMetrics, logger });
//   startGateway({ …, requestSink: writer.sink });   …   await writer.close();

export interface RequestLogWriterOptions {
  /** Most records held in memory (queued and being written); beyond it new records are dropped. Default 10,000. */
  maxQueue?: number;
  /** Records per insert. Default 200. */
  batchSize?: number;
  /** Longest a record waits in a part-filled batch. Default 1,000 ms. */
  flushIntervalMs?: number;
  /** Where the writer's series are registered (the gateway's registry). */
  metrics?: { readonly registry: Registry };
  logger?: { error(object: object, message: string): void };
  /** Least time between two write-error log lines; the ones between are counted. Default 10 s. */
  errorLogIntervalMs?: number;
  /** Whether a failed insert is worth retrying (the store unreachable). Default isTransientStoreError. */
  isTransient?: (error: unknown) => boolean;
  /** Wait before the first retry of a batch; doubles per failure up to retryMaxMs. Default 250 ms. */
  retryMinMs?: number;
  /** Longest wait between retries. Default 10 s. */
  retryMaxMs?: number;
  logInfo?: (object: object, message: string) => void;
}

export interface RequestLogWriterStats {
  readonly queued: number;
  readonly written: number;
  readonly dropped: { readonly queueFull: number; readonly writeFailed: number; readonly closed: number };
  readonly failedBatches: number;
  /** Batch writes that failed with the store unreachable and were queued again. */
  readonly retriedBatches: number;
}

export interface RequestLogWriter {
  /** The gateway's requestSink. */
  readonly sink: RequestRecordSink;
  /** Resolves once every record accepted before the call has been written (or has failed). */
  flush(): Promise<void>;
  /**
   * Stops accepting records, then flushes for at most `timeoutMs` (default 5 s; a hung store
   * must not hold up shutdown): what is still queued then is dropped and counted. Does not
   * close the store. Idempotent.
   */
  close(options?: { timeoutMs?: number }): Promise<void>;
  stats(): RequestLogWriterStats;
}

type DropReason = 'queue_full' | 'write_failed' | 'closed';

export function createRequestLogWriter(store: RequestLogStore, options: RequestLogWriterOptions = {}): RequestLogWriter {
  const maxQueue = options.maxQueue ?? 10_000;
  const batchSize = options.batchSize ?? 200;
  const flushIntervalMs = options.flushIntervalMs ?? 1_000;
  const errorLogIntervalMs = options.errorLogIntervalMs ?? 10_000;
  const isTransient = options.isTransient ?? isTransientStoreError;
  const retryMinMs = options.retryMinMs ?? 250;
  const retryMaxMs = options.retryMaxMs ?? 10_000;
  if (!(maxQueue >= 1 && batchSize >= 1 && flushIntervalMs > 0 && retryMinMs > 0 && retryMaxMs >= retryMinMs)) {
    throw new RangeError('maxQueue, batchSize, flushIntervalMs and the retry delays must be positive');
  }

  let queue: RequestRecord[] = [];
  let accepted = 0; // records ever queued
  let settled = 0; // of those, written or failed
  let written = 0;
  let failedBatches = 0;
  let retriedBatches = 0;
  // While the store is unreachable: the pending retry, and the delay before the next one.
  let backoff: { timer: NodeJS.Timeout; done: Promise<void>; fire: () => void } | undefined;
  let retryDelayMs = retryMinMs;
  let outageSince: number | undefined;
  const dropped = { queue_full: 0, write_failed: 0, closed: 0 };
  let inFlight: Promise<void> | undefined;
  let writing = 0; // records of the batch in flight
  let pumpScheduled = false;
  let closed = false;
  let lastErrorLogAt = -Infinity;
  let unloggedErrors = 0;
  const series = options.metrics === undefined ? undefined : writerSeries(options.metrics.registry, () => queue.length);

  const drop = (reason: DropReason, count: number): void => {
    dropped[reason] += count;
    series?.dropped.inc({ reason }, count);
  };

  const sink: RequestRecordSink = (record) => {
    if (closed) return drop('closed', 1);
    if (queue.length + writing >= maxQueue) return drop('queue_full', 1);
    queue.push(record);
    accepted++;
    if (queue.length >= batchSize) schedulePump();
    else armFlush();
  };

  // Writes one batch; the next starts only when it is done (one insert in flight at a time).
  // While backing off from an unreachable store, waits for the retry instead.
  function writeNext(): Promise<void> {
    if (inFlight !== undefined) return inFlight;
    if (backoff !== undefined) return backoff.done;
    if (queue.length === 0) return Promise.resolve();
    const batch = queue.length <= batchSize ? queue : queue.slice(0, batchSize);
    queue = queue.length <= batchSize ? [] : queue.slice(batchSize);
    writing = batch.length;
    // Through a promise, so a store that throws synchronously is a counted failure too.
    inFlight = Promise.resolve(batch).then((records) => store.insertMany(records)).then(
      () => {
        written += batch.length;
        series?.written.inc(batch.length);
        settled += batch.length;
        retryDelayMs = retryMinMs;
        if (outageSince !== undefined) {
          options.logInfo?.({ unreachable_ms: Date.now() - outageSince, queued: queue.length }, 'request log store reachable again; writing the queued records');
          outageSince = undefined;
        }
      },
      (error: unknown) => {
        failedBatches++;
        series?.writeErrors.inc();
        if (!closed && isTransient(error)) {
          // Back to the head of the queue, in order; new records still go behind it.
          retriedBatches++;
          queue = queue.length === 0 ? batch : batch.concat(queue);
          outageSince ??= Date.now();
          startBackoff();
          logWriteError(error, batch.length, 'request log store unreachable; records kept and retried');
          return;
        }
        settled += batch.length;
        drop('write_failed', batch.length);
        logWriteError(error, batch.length, 'request log write failed; records dropped');
      },
    ).finally(() => {
      inFlight = undefined;
      writing = 0;
      if (queue.length >= batchSize) schedulePump();
      else armFlush();
    });
    return inFlight;
  }

  function startBackoff(): void {
    let fire!: () => void;
    const done = new Promise<void>((resolve) => {
      fire = () => {
        if (backoff?.done !== done) return;
        clearTimeout(backoff.timer);
        backoff = undefined;
        resolve();
        schedulePump();
      };
    });
    const timer = setTimeout(() => fire(), retryDelayMs);
    timer.unref();
    backoff = { timer, done, fire };
    retryDelayMs = Math.min(retryDelayMs * 2, retryMaxMs);
  }

  function schedulePump(): void {
    if (pumpScheduled || inFlight !== undefined || backoff !== undefined || queue.length === 0) return;
    pumpScheduled = true;
    // Never write from inside the sink: the sink runs in the server's onResponse hook.
    setImmediate(() => {
      pumpScheduled = false;
      void writeNext();
    });
  }

  function logWriteError(error: unknown, records: number, message: string): void {
    const now = Date.now();
    if (now - lastErrorLogAt < errorLogIntervalMs) {
      unloggedErrors++;
      return;
    }
    lastErrorLogAt = now;
    const reason = error instanceof Error ? error.message : String(error);
    options.logger?.error({ err: { message: reason }, records, earlier_failures_not_logged: unloggedErrors }, message);
    unloggedErrors = 0;
  }

  // Armed by the first record of a part-filled batch, not on an interval: an idle writer
  // wakes nothing, and a record waits at most flushIntervalMs.
  let flushTimer: NodeJS.Timeout | undefined;
  function armFlush(): void {
    if (flushTimer !== undefined || closed || queue.length === 0) return;
    flushTimer = setTimeout(() => {
      flushTimer = undefined;
      void writeNext();
    }, flushIntervalMs);
    flushTimer.unref();
  }

  async function flush(): Promise<void> {
    const target = accepted;
    while (settled < target) await writeNext();
  }

  return {
    sink,
    flush,
    async close(closeOptions = {}) {
      closed = true;
      clearTimeout(flushTimer);
      flushTimer = undefined;
      // One last try now rather than after the backoff; a failure then drops (write_failed).
      backoff?.fire();
      let deadline: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => {
        deadline = setTimeout(() => resolve(true), closeOptions.timeoutMs ?? 5_000);
      });
      const gaveUp = await Promise.race([flush().then(() => false), timedOut]);
      clearTimeout(deadline);
      if (gaveUp && queue.length > 0) {
        drop('closed', queue.length);
        settled += queue.length;
        queue = [];
      }
    },
    stats: () => ({
      queued: queue.length,
      written,
      dropped: { queueFull: dropped.queue_full, writeFailed: dropped.write_failed, closed: dropped.closed },
      failedBatches,
      retriedBatches,
    }),
  };
}

interface WriterSeries {
  readonly dropped: Counter<'reason'>;
  readonly written: Counter;
  readonly writeErrors: Counter;
}

/** The writer's series; reused when a writer already registered them on this registry. */
function writerSeries(registry: Registry, queueDepth: () => number): WriterSeries {
  const existing = <T>(name: string): T | undefined => registry.getSingleMetric(name) as T | undefined;
  const dropped =
    existing<Counter<'reason'>>('aigateway_request_log_dropped_total') ??
    new Counter({
      name: 'aigateway_request_log_dropped_total',
      help: 'Request log records not stored, by reason (queue_full | write_failed | closed).',
      labelNames: ['reason'] as const,
      registers: [registry],
    });
  const written =
    existing<Counter>('aigateway_request_log_written_total') ??
    new Counter({ name: 'aigateway_request_log_written_total', help: 'Request log records stored.', registers: [registry] });
  const writeErrors =
    existing<Counter>('aigateway_request_log_write_errors_total') ??
    new Counter({
      name: 'aigateway_request_log_write_errors_total',
      help: 'Failed request log batch writes: retried while the store is unreachable, otherwise their records are dropped (reason write_failed).',
      registers: [registry],
    });
  if (existing('aigateway_request_log_queue_depth') === undefined) {
    new Gauge({
      name: 'aigateway_request_log_queue_depth',
      help: 'Request log records waiting to be written.',
      registers: [registry],
      collect() {
        this.set(queueDepth());
      },
    });
  }
  // Zero series from the start, so dashboards and alerts see 0 rather than no data.
  for (const reason of ['queue_full', 'write_failed', 'closed'] as const) dropped.inc({ reason }, 0);
  return { dropped, written, writeErrors };
}

// Node's socket errors and pg's own messages when the server cannot be reached.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);
const UNREACHABLE_MESSAGES = /connection terminated|timeout exceeded when trying to connect|query read timeout|connection error|not queryable|database is locked/i;

/**
 * A store error that says nothing about the records: the database is unreachable, shutting
 * down, out of connections or busy. SQLSTATE classes 08 (connection), 53 (resources),
 * 57P01–57P05 (shutdown, cannot connect now), 40001/40P01 and 55P03 (conflicts, retried).
 */
export function isTransientStoreError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNREACHABLE_CODES.has(code)) return true;
    if (/^(08|53)[0-9A-Z]{3}$/.test(code) || /^57P0[1-5]$/.test(code) || code === '40001' || code === '40P01' || code === '55P03') return true;
  }
  if (error instanceof AggregateError && error.errors.some(isTransientStoreError)) return true;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && UNREACHABLE_MESSAGES.test(message);
}
