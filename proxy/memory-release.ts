import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Handing memory back to the system when a thread idles (issue 32, docs/performance.md): one
// memory-reducing full collection of the calling thread's isolate, then glibc's malloc_trim().
// Used by `serve` (start-up, and after traffic) and by the SQLite log worker after its writes.

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' | 'regular' }) => void;

let isolateGc: GcFunction | undefined; // per isolate: each thread has its own module instance

/**
 * V8's gc(): `global.gc` under --expose-gc, else fetched once from a new context with the flag set
 * for that moment. Kept, so after its first release a thread no longer touches the process-wide
 * flag; should another thread unset it in between, the next try sets it again (none: no collection).
 */
function gcFunction(): GcFunction {
  if (isolateGc !== undefined) return isolateGc;
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return (isolateGc = exposed as GcFunction);
  for (let attempt = 0; attempt < 3 && isolateGc === undefined; attempt++) {
    // The flag is part of the compile cache's key: it is unset again at once, so modules loaded
    // later (lazily, on first use) still find their cached code.
    setFlagsFromString('--expose-gc');
    try {
      isolateGc = runInNewContext('typeof gc === "function" ? gc : undefined') as GcFunction | undefined;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  return isolateGc ?? (() => undefined);
}

/**
 * The "last resort" collection (a full GC that also shrinks the young generation and unmaps the
 * freed pages) of the calling thread's isolate; then the free pages inside malloc's arenas.
 * `regular`: a plain full collection instead (the benchmarks compare the two).
 */
export function releaseIsolateMemory(flavor: 'last-resort' | 'regular' = 'last-resort'): void {
  gcFunction()({ type: 'major', execution: 'sync', flavor });
  trimMallocArenas();
}

// glibc keeps the memory that threads free inside its malloc arenas (one per thread: the serving
// thread, V8's GC and compiler helpers, the log worker). After traffic ≈ 20 MiB of a gateway's
// resident set is such free memory, never reused while it idles; only malloc_trim() hands those
// pages back, and Node has no binding for it. SQLite loads an extension by dlopen()ing a library
// and calling one of its functions with the connection as first argument: naming libc and
// malloc_trim calls malloc_trim(<pointer>). A pad that large leaves the top of the main heap
// alone; every arena's free pages inside it are still released (madvise). malloc_trim's result
// (1: released) reads as an initialisation error to SQLite, which then closes the library again.
// Elsewhere (musl, macOS, Windows: no libc.so.6 or no malloc_trim) the load fails and nothing
// happens.

type SqliteModule = typeof import('node:sqlite');

/**
 * Runs glibc's malloc_trim() on every malloc arena of the process (a few ms; for idle moments only).
 * Returns false when it could not be called.
 */
export function trimMallocArenas(loadModule: () => SqliteModule = () => process.getBuiltinModule('node:sqlite')): boolean {
  let db: InstanceType<SqliteModule['DatabaseSync']> | undefined;
  try {
    // A private in-memory database that never runs a statement: extensions are allowed on it only.
    db = new (loadModule().DatabaseSync)(':memory:', { allowExtension: true });
    db.loadExtension('libc.so.6', 'malloc_trim'); // returned 0: nothing to release
    return true;
  } catch (error) {
    // "error during initialization": malloc_trim returned 1, pages were released.
    return error instanceof Error && /error during initiali[sz]ation/i.test(error.message);
  } finally {
    db?.close();
  }
}

export interface QuietRelease {
  /** Work happened: memory grows; the release waits for the next quiet stretch. */
  touch(): void;
  stop(): void;
}

export interface QuietStretch {
  /** True while the thread works: the stretch starts again. */
  readonly busy: () => boolean;
  /** Asked once the stretch is long enough: is a release worth it now? */
  readonly worthIt?: () => boolean;
  readonly release: () => void;
  /** After each release (a new baseline, a disarm). */
  readonly released?: () => void;
  readonly intervalMs?: number;
  /** Quiet ticks in a row before the release. */
  readonly quietTicks?: number;
}

/**
 * The one loop behind both releases: a tick (unref'd) every `intervalMs`; `quietTicks` ticks in
 * a row not busy, then `release` if it is worth it. A release that throws leaves memory as it
 * was: it must not escape the timer. `reset` starts the stretch again at once.
 */
export function afterQuietStretch(stretch: QuietStretch): { reset(): void; stop(): void } {
  const quietTicks = stretch.quietTicks ?? 2;
  let quiet = 0;
  const timer = setInterval(() => {
    if (stretch.busy()) {
      quiet = 0;
      return;
    }
    if (++quiet < quietTicks) return;
    quiet = 0;
    if (stretch.worthIt !== undefined && !stretch.worthIt()) return;
    try {
      stretch.release();
    } catch {
      // Memory stays as it was; the thread goes on.
    }
    stretch.released?.();
  }, stretch.intervalMs ?? 1_000);
  timer.unref();
  return {
    reset: () => {
      quiet = 0;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * For a thread that knows when it works (the log worker: each message). Once it has been
 * touched and then left alone for `quietTicks` ticks in a row, `release` runs once; the next
 * touch arms it again. Nothing per message but a flag.
 */
export function releaseWhenQuiet(options: { intervalMs?: number; quietTicks?: number; release?: () => void } = {}): QuietRelease {
  let touched = false;
  const stretch = afterQuietStretch({
    busy: () => !touched, // nothing to hand back until work happens
    release: options.release ?? releaseIsolateMemory,
    released: () => {
      touched = false;
    },
    intervalMs: options.intervalMs,
    quietTicks: options.quietTicks,
  });
  return {
    touch: () => {
      touched = true;
      stretch.reset();
    },
    stop: stretch.stop,
  };
}
