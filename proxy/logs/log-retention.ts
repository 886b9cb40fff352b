import type { RequestLogStore } from './request-log-store.ts';

// Retention: records older than retentionMs are deleted shortly after start and then every
// intervalMs. With several replicas on one PostgreSQL each runs it; the deletes are
// idempotent and chunked, so that costs a few cheap queries, not correctness. A store
// partitioned by day (PostgreSQL) is asked for whole days: a pass drops the partitions that
// are wholly past the retention, and records live up to one day longer than retentionMs.

export interface LogRetentionOptions {
  retentionMs: number;
  /** Time between passes. Default one hour. */
  intervalMs?: number;
  /** Delay before the first pass (keeps start-up quiet). Default 10 s. */
  firstPassDelayMs?: number;
  now?: () => number;
  logger?: { info(object: object, message: string): void; error(object: object, message: string): void };
}

export interface LogRetention {
  /** Runs one pass now; resolves with the number of records deleted. */
  runOnce(): Promise<number>;
  /** Stops the schedule and waits for a pass in progress. */
  stop(): Promise<void>;
}

export function startLogRetention(store: RequestLogStore, options: LogRetentionOptions): LogRetention {
  if (!(options.retentionMs > 0)) throw new RangeError('retentionMs must be positive');
  const now = options.now ?? Date.now;
  let running: Promise<number> | undefined;
  let stopped = false;

  const runOnce = (): Promise<number> => {
    const cutoff = now() - options.retentionMs;
    running ??= store
      .deleteOlderThan(store.retentionCutoff?.(cutoff) ?? cutoff)
      .then(
        (deleted) => {
          if (deleted > 0) options.logger?.info({ deleted }, 'request log retention pass');
          return deleted;
        },
        (error: unknown) => {
          options.logger?.error({ err: { message: error instanceof Error ? error.message : String(error) } }, 'request log retention pass failed');
          return 0;
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  const tick = (): void => {
    if (!stopped) void runOnce();
  };
  const first = setTimeout(tick, options.firstPassDelayMs ?? 10_000);
  const every = setInterval(tick, options.intervalMs ?? 3_600_000);
  first.unref();
  every.unref();

  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(every);
      await running;
    },
  };
}
