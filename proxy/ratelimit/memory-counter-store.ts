// The in-process counter store, for a standalone gateway (one process). Each call runs
// synchronously inside its promise, so consume's check-and-count cannot interleave.

import {
  addToCounts,
  assertValidSpec,
  decideFromCounts,
  elapsedInWindow,
  reservedAmount,
  rollWindow,
  slidingUsage,
  type CounterDecision,
  type RateLimitCounterStore,
  type Reservation,
  type WindowCounts,
  type WindowSpec,
} from './counter-store.ts';

export interface MemoryCounterStoreOptions {
  /** Most counters kept; the least recently used is evicted beyond it. Default 100,000. */
  maxKeys?: number;
}

/** Counters at the cold end checked for expiry per write; a few keep each call O(1). */
const SWEEP_PER_WRITE = 4;

/** One counter, also a link in the recency list (most recent at the head). */
interface Counter {
  readonly id: string;
  readonly windowMs: number;
  counts: WindowCounts;
  newer: Counter | undefined;
  older: Counter | undefined;
}

/**
 * Sliding-window counters in memory, bounded by `maxKeys` with least-recently-used eviction.
 * @example
 * const store = new MemoryCounterStore();
 * const d = await store.consume({ key: 'rl:p1:key-a', windowMs: 60_000, limit: 3 }, 1, Date.now());
 */
export class MemoryCounterStore implements RateLimitCounterStore {
  readonly #maxKeys: number;
  // A Map plus a doubly linked recency list: exact LRU in O(1). (Re-inserting into a Map
  // to track recency looks simpler, but V8 leaves holes at the Map's front that every
  // "oldest entry" lookup must skip — measured 10x slower at 10k keys.)
  readonly #counters = new Map<string, Counter>();
  #newest: Counter | undefined;
  #oldest: Counter | undefined;

  constructor(options: MemoryCounterStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`maxKeys must be a positive integer, got ${maxKeys}`);
    this.#maxKeys = maxKeys;
  }

  /** How many counters are held (for tests and metrics). */
  get size(): number {
    return this.#counters.size;
  }

  async consume(spec: WindowSpec, cost: number, now: number): Promise<CounterDecision> {
    assertValidSpec(spec, cost, 'cost');
    const counts = this.#rolled(spec, now);
    const used = slidingUsage(counts.previous, counts.current, elapsedInWindow(counts, now, spec.windowMs), spec.windowMs);
    if (used + cost <= spec.limit) {
      const admitted = addToCounts(counts, cost);
      this.#store(spec, admitted, now);
      return decideFromCounts(spec, true, admitted, now);
    }
    return decideFromCounts(spec, false, counts, now);
  }

  async reserve(spec: WindowSpec, amount: number, now: number): Promise<Reservation> {
    assertValidSpec(spec, amount, 'cost');
    const counts = this.#rolled(spec, now);
    const used = slidingUsage(counts.previous, counts.current, elapsedInWindow(counts, now, spec.windowMs), spec.windowMs);
    if (!(used < spec.limit)) return { ...decideFromCounts(spec, false, counts, now), reserved: 0 };
    const reserved = reservedAmount(used, amount, spec.limit);
    if (reserved === 0) return { ...decideFromCounts(spec, true, counts, now), reserved };
    const admitted = addToCounts(counts, reserved);
    this.#store(spec, admitted, now);
    return { ...decideFromCounts(spec, true, admitted, now), reserved };
  }

  async peek(spec: WindowSpec, now: number): Promise<CounterDecision> {
    assertValidSpec(spec, 0, null);
    const decision = decideFromCounts(spec, false, this.#rolled(spec, now), now);
    return { ...decision, allowed: decision.used < spec.limit };
  }

  async add(spec: WindowSpec, amount: number, now: number): Promise<void> {
    assertValidSpec(spec, amount, 'amount');
    this.#store(spec, addToCounts(this.#rolled(spec, now), amount), now);
  }

  async close(): Promise<void> {
    this.#counters.clear();
    this.#newest = undefined;
    this.#oldest = undefined;
  }

  /** The counter's counts rolled to `now`; a read refreshes recency but creates nothing. */
  #rolled(spec: WindowSpec, now: number): WindowCounts {
    const counter = this.#counters.get(counterId(spec));
    if (counter === undefined) return rollWindow(undefined, now, spec.windowMs);
    counter.counts = rollWindow(counter.counts, now, spec.windowMs);
    this.#touch(counter);
    return counter.counts;
  }

  #store(spec: WindowSpec, counts: WindowCounts, now: number): void {
    const id = counterId(spec);
    let counter = this.#counters.get(id);
    if (isExpired(counts, now, spec.windowMs)) {
      // Empty (e.g. refunded to zero) is the same as absent.
      if (counter !== undefined) this.#drop(counter);
    } else if (counter !== undefined) {
      counter.counts = counts;
      this.#touch(counter);
    } else {
      counter = { id, windowMs: spec.windowMs, counts, newer: undefined, older: undefined };
      this.#counters.set(id, counter);
      this.#link(counter);
      if (this.#counters.size > this.#maxKeys && this.#oldest !== undefined) this.#drop(this.#oldest);
    }
    this.#sweep(now);
  }

  /** Drops expired counters at the cold end; stops at the first live one. */
  #sweep(now: number): void {
    for (let i = 0; i < SWEEP_PER_WRITE; i++) {
      const oldest = this.#oldest;
      if (oldest === undefined || !isExpired(oldest.counts, now, oldest.windowMs)) return;
      this.#drop(oldest);
    }
  }

  #touch(counter: Counter): void {
    if (counter === this.#newest) return;
    this.#unlink(counter);
    this.#link(counter);
  }

  #link(counter: Counter): void {
    counter.older = this.#newest;
    counter.newer = undefined;
    if (this.#newest !== undefined) this.#newest.newer = counter;
    this.#newest = counter;
    this.#oldest ??= counter;
  }

  #unlink(counter: Counter): void {
    if (counter.newer !== undefined) counter.newer.older = counter.older;
    else this.#newest = counter.older;
    if (counter.older !== undefined) counter.older.newer = counter.newer;
    else this.#oldest = counter.newer;
    counter.newer = undefined;
    counter.older = undefined;
  }

  #drop(counter: Counter): void {
    this.#unlink(counter);
    this.#counters.delete(counter.id);
  }
}

// No two (key, windowMs) pairs collide: windowMs never contains ':'.
function counterId(spec: WindowSpec): string {
  return `${spec.windowMs}:${spec.key}`;
}

/** Both windows empty, or so old that nothing in them counts any more. */
function isExpired(counts: WindowCounts, now: number, windowMs: number): boolean {
  return (counts.previous === 0 && counts.current === 0) || Math.floor(now / windowMs) >= counts.window + 2;
}
