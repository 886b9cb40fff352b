import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Start-up allocates enough (module code, schemas, routes, plugins) that V8 grows the young
// generation to the image's --max-semi-space-size and keeps it while idle: ≈ 24 MiB resident of
// a 141 MiB idle gateway. One memory-reducing full collection once everything is built, before
// the port opens (so no request waits behind it), hands those pages back; traffic grows the
// young generation again as it needs (docs/performance.md, issue 32).

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** V8's gc(): `global.gc` under --expose-gc, else fetched once from a new context with the flag set for that moment. */
function gcFunction(): GcFunction {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as GcFunction;
  // The flag is part of the compile cache's key: it is unset again at once, so modules loaded
  // later (lazily, on first use) still find their cached code.
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as GcFunction;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** The "last resort" collection: a full GC that also shrinks the young generation and unmaps the freed pages. */
export function releaseStartUpMemory(): void {
  gcFunction()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
