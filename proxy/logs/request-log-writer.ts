import { Counter, Gauge, type Registry } from 'prom-client';
import type { RequestRecord, RequestRecordSink } from '../observability/request-record.ts';
import type { RequestLogStore } from './request-log-store.ts';

// Moves finished-request records from the response path to the log store: the sink only
// pushes onto an in-memory queue (O(1), never awaits, never throws); batches are written
// one at a time, when a batch is full or every flushIntervalMs. When the store is slower
// than the traffic the queue fills, and further records are dropped and counted rather
// than held: memory stays bounded and requests never wait for the log.
//
//   const writer = createRequestLogWriter(store, { metrics: gatewayMetrics, logger });
//   startGateway({ …, requestSink: writer.sink });   …   await writer.close();

export interface RequestLogWriterOptions {
  /** Most records held in memory; beyond it new records are dropped. Default 10,000. */
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
}

export interface RequestLogWriterStats {
  readonly queued: number;
  readonly written: number;
  readonly dropped: { readonly queueFull: number; readonly writeFailed: number; readonly closed: number };
  readonly failedBatches: number;
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
  if (!(maxQueue >= 1 && batchSize >= 1 && flushIntervalMs > 0)) throw new RangeError('maxQueue, batchSize and flushIntervalMs must be positive');

  let queue: RequestRecord[] = [];
  let accepted = 0; // records ever queued
  let settled = 0; // of those, written or failed
  let written = 0;
  let failedBatches = 0;
  const dropped = { queue_full: 0, write_failed: 0, closed: 0 };
  let inFlight: Promise<void> | undefined;
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
    if (queue.length >= maxQueue) return drop('queue_full', 1);
    queue.push(record);
    accepted++;
    if (queue.length >= batchSize) schedulePump();
  };

  // Writes one batch; the next starts only when it is done (one insert in flight at a time).
  function writeNext(): Promise<void> {
    if (inFlight !== undefined) return inFlight;
    if (queue.length === 0) return Promise.resolve();
    const batch = queue.length <= batchSize ? queue : queue.slice(0, batchSize);
    queue = queue.length <= batchSize ? [] : queue.slice(batchSize);
    // Through a promise, so a store that throws synchronously is a counted failure too.
    inFlight = Promise.resolve(batch).then((records) => store.insertMany(records)).then(
      () => {
        written += batch.length;
        series?.written.inc(batch.length);
      },
      (error: unknown) => {
        failedBatches++;
        series?.writeErrors.inc();
        drop('write_failed', batch.length);
        logWriteError(error, batch.length);
      },
    ).finally(() => {
      settled += batch.length;
      inFlight = undefined;
      if (queue.length >= batchSize) schedulePump();
    });
    return inFlight;
  }

  function schedulePump(): void {
    if (pumpScheduled || inFlight !== undefined) return;
    pumpScheduled = true;
    // Never write from inside the sink: the sink runs in the server's onResponse hook.
    setImmediate(() => {
      pumpScheduled = false;
      void writeNext();
    });
  }

  function logWriteError(error: unknown, records: number): void {
    const now = Date.now();
    if (now - lastErrorLogAt < errorLogIntervalMs) {
      unloggedErrors++;
      return;
    }
    lastErrorLogAt = now;
    const message = error instanceof Error ? error.message : String(error);
    options.logger?.error({ err: { message }, records, earlier_failures_not_logged: unloggedErrors }, 'request log write failed; records dropped');
    unloggedErrors = 0;
  }

  const timer = setInterval(() => void writeNext(), flushIntervalMs);
  timer.unref();

  async function flush(): Promise<void> {
    const target = accepted;
    while (settled < target) await writeNext();
  }

  return {
    sink,
    flush,
    async close(closeOptions = {}) {
      closed = true;
      clearInterval(timer);
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
      help: 'Failed request log batch writes (their records count as dropped, reason write_failed).',
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
