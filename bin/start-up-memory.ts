import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
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
  /**
   * Old-generation room left after the collections of a quiet stretch (bytes; 0: V8's own limit).
   * See `headroomPercent`.
   */
  readonly headroomBytes?: number;
  /** The live heap after the last full collection (bytes). */
  readonly liveBytes?: () => number;
  /** Sets V8's --heap-growing-percent (0: V8's own heuristic). */
  readonly setGrowingPercent?: (percent: number) => void;
}

const BUSY_TICKS_FOR_TRAFFIC = 3;

/** Twice the image's young generation (--max-semi-space-size=16): see `headroomPercent`. */
export const DEFAULT_IDLE_HEAP_HEADROOM_MIB = 32;

/**
 * The heap growing percent that leaves `headroomBytes` above a live heap of `liveBytes`.
 *
 * A collection while the gateway idles (the release's, or V8's memory reducer's) sets the old
 * generation's limit just above the live heap (×1.1). V8 starts the next full collection once
 * less room is left than the young generation's size, and traffic grows the young generation back
 * to its cap (16 MiB) within a second: so the first seconds of the next burst always ran a full
 * collection — ≈ 80 ms of marking steps and a 5–15 ms pause on the serving thread
 * (docs/performance.md, issue 32). While quiet, V8's limit is computed with a fixed factor that
 * leaves this much room; once traffic is back (busy for three samples in a row), V8's own
 * heuristic again.
 */
export function headroomPercent(headroomBytes: number, liveBytes: number): number {
  if (!(headroomBytes > 0)) return 0;
  return Math.min(1_000, Math.ceil((100 * headroomBytes) / Math.max(liveBytes, 1024 * 1024)));
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
  const headroomBytes = options.headroomBytes ?? DEFAULT_IDLE_HEAP_HEADROOM_MIB * 1024 * 1024;
  const liveBytes = options.liveBytes ?? (() => getHeapStatistics().used_heap_size);
  const setGrowingPercent = options.setGrowingPercent ?? ((percent: number) => setFlagsFromString(`--heap-growing-percent=${percent}`));
  let baseline = residentBytes();
  let before = 0;
  let live = liveBytes(); // after start-up's collection
  let growing = false; // the idle percent is set
  let busyTicks = 0;
  return afterQuietStretch({
    busy: () => {
      const busy = utilisation() >= idleUtilisation;
      busyTicks = busy ? busyTicks + 1 : 0;
      // A quiet stretch's own collections busy the loop for a sample or two; traffic keeps it busy.
      if (growing && busyTicks >= BUSY_TICKS_FOR_TRAFFIC) {
        setGrowingPercent(0);
        growing = false;
      }
      return busy;
    },
    worthIt: () => {
      if (!growing && headroomBytes > 0) {
        // Before any collection of the quiet stretch, V8's memory reducer's included.
        setGrowingPercent(headroomPercent(headroomBytes, live));
        growing = true;
      }
      before = residentBytes();
      return before - baseline >= minGrowthBytes;
    },
    release: options.collect ?? releaseStartUpMemory,
    released: () => {
      live = liveBytes();
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
