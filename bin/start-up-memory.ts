import { performance } from 'node:perf_hooks';
import { afterQuietStretch, releaseIsolateMemory } from '../proxy/memory-release.ts';

// Start-up allocates enough (module code, schemas, routes, plugins) that V8 grows the young
// generation to the image's --max-semi-space-size and keeps it while idle: ≈ 24 MiB resident of
// a 141 MiB idle gateway. One memory-reducing full collection once everything is built, before
// the port opens (so no request waits behind it), hands those pages back; traffic grows the
// young generation again as it needs (docs/performance.md, issue 32).

/**
 * The "last resort" collection: a full GC that also shrinks the young generation and unmaps the
 * freed pages; then the free pages inside malloc's arenas go back too (proxy/memory-release.ts).
 */
export function releaseStartUpMemory(): void {
  releaseIsolateMemory();
}

export interface IdleRelease {
  stop(): void;
}

export interface IdleReleaseOptions {
  /** How often the main thread's utilisation is sampled (ms). */
  readonly intervalMs?: number;
  /** Samples in a row under `idleUtilisation` before the collection runs. */
  readonly idleSamples?: number;
  readonly idleUtilisation?: number;
  /** Resident growth since the last collection that makes one worth running (bytes). */
  readonly minGrowthBytes?: number;
  readonly collect?: () => void;
  /** After each release: the resident set before and after it (bytes), e.g. for a log line. */
  readonly onReleased?: (before: number, after: number) => void;
  readonly utilisation?: () => number;
  readonly residentBytes?: () => number;
}

/**
 * Traffic grows the young generation and leaves promoted garbage in the old space; V8 keeps
 * both while the process idles. Once the event loop has been idle for a few samples in a row
 * (no request waits: nothing is being served) and the resident set has grown since the last
 * collection, one memory-reducing full collection hands the pages back. Sampling the event
 * loop's utilisation costs nothing per request.
 */
export function releaseMemoryWhenIdle(options: IdleReleaseOptions = {}): IdleRelease {
  const idleUtilisation = options.idleUtilisation ?? 0.005;
  const minGrowthBytes = options.minGrowthBytes ?? 16 * 1024 * 1024;
  const residentBytes = options.residentBytes ?? (() => process.memoryUsage.rss());
  const utilisation = options.utilisation ?? loopUtilisation();
  let baseline = residentBytes();
  let before = 0;
  return afterQuietStretch({
    busy: () => utilisation() >= idleUtilisation,
    worthIt: () => {
      before = residentBytes();
      return before - baseline >= minGrowthBytes;
    },
    release: options.collect ?? releaseStartUpMemory,
    released: () => {
      baseline = residentBytes();
      try {
        options.onReleased?.(before, baseline);
      } catch {
        // A report that fails must not escape the timer.
      }
    },
    intervalMs: options.intervalMs,
    quietTicks: options.idleSamples,
  });
}

/** The main thread's event-loop utilisation since the previous call (0 idle … 1 busy). */
function loopUtilisation(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const delta = performance.eventLoopUtilization(now, last);
    last = now;
    return delta.utilization;
  };
}
