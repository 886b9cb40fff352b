// Rate-limit counters: one interface, two stores (memory for standalone, Redis for several
// gateway processes), both held to test/proxy/ratelimit/counter-store-suite.ts.
//
// Algorithm: the sliding-window counter. Each (key, window size) keeps two fixed windows —
// the count of the current window and of the one before it — and estimates the usage in
// the sliding window ending `now` as
//
//   used = previous * (1 - elapsed / windowMs) + current
//
// where `elapsed` is how far `now` is into the current fixed window. That is O(1) memory
// per key and a handful of Redis commands in one Lua script, unlike a log of timestamps.
// The approximation assumes the previous window's usage was spread evenly across it: a
// burst at the very end of the previous window is under-counted later in the current one
// (an exact sliding window could then hold somewhat more than `limit`), a burst at its
// start over-counted. Steady traffic is counted exactly; it is the usual trade for limits.
//
// Both stores share the arithmetic below so that their answers agree to the bit.

export interface WindowSpec {
  /** Counter identity, e.g. `rl:<policyId>:<groupKey>`; opaque to the store. */
  readonly key: string;
  readonly windowMs: number;   // 60_000 (rpm), 3_600_000 (rph), 86_400_000 (rpd)
  readonly limit: number;      // > 0
}

export interface CounterDecision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Usage in the sliding window after this call (consume: including the cost when admitted). */
  readonly used: number;
  readonly remaining: number;  // max(0, floor(limit - used))
  /** ms until the window has room again (an estimate: when the oldest counted usage slides out); 0 when remaining > 0. */
  readonly resetMs: number;
}

export interface RateLimitCounterStore {
  /** Atomically admits `cost` if used + cost <= limit, counting it; else refuses and counts nothing. */
  consume(spec: WindowSpec, cost: number, now: number): Promise<CounterDecision>;
  /** Usage so far, counting nothing; allowed = used < limit (token policies admit on usage already counted). */
  peek(spec: WindowSpec, now: number): Promise<CounterDecision>;
  /**
   * Token reservations: atomically, while used < limit, admits and counts min(amount,
   * limit - used), reported as `reserved`; with no room left refuses and counts nothing. Settle later with
   * add(actual - reserved), so parallel requests cannot all be admitted on the same room.
   */
  reserve(spec: WindowSpec, amount: number, now: number): Promise<Reservation>;
  /** Adds usage after the fact (tokens from a provider's answer); a negative amount refunds. */
  add(spec: WindowSpec, amount: number, now: number): Promise<void>;
  /** Optional warm-up before serving (connect, load scripts), bounded by `timeoutMs`. */
  connect?(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}


export interface Reservation extends CounterDecision {
  /** What was counted: min(amount, room before the call); 0 when refused (allowed false). */
  readonly reserved: number;
}

/** How much of `amount` an admitted reservation (used < limit) takes: what is left, at most. */
export function reservedAmount(used: number, amount: number, limit: number): number {
  return Math.max(0, Math.min(amount, limit - used));
}

/** The two fixed windows of one counter, rolled forward to `now`. */
export interface WindowCounts {
  /** Index of the current fixed window: floor(now / windowMs), or later (see rollWindow). */
  readonly window: number;
  readonly previous: number;
  readonly current: number;
}

/**
 * Rolls stored counts forward to the fixed window holding `now`: one window on, the current
 * count becomes the previous one; two or more on, both are zero.
 * A stored window later than `now`'s (this process's clock lags another's) is kept as is:
 * counters never roll backwards. The Lua scripts in redis-counter-store.ts mirror this.
 */
export function rollWindow(stored: WindowCounts | undefined, now: number, windowMs: number): WindowCounts {
  const window = Math.floor(now / windowMs);
  if (stored === undefined || stored.window < window - 1) return { window, previous: 0, current: 0 };
  if (stored.window === window - 1) return { window, previous: stored.current, current: 0 };
  return stored;
}

/** How far `now` is into the counts' fixed window, within [0, windowMs]. */
export function elapsedInWindow(counts: WindowCounts, now: number, windowMs: number): number {
  return Math.min(windowMs, Math.max(0, now - counts.window * windowMs));
}

/** The sliding-window estimate; keep the expression identical to the Lua scripts'. */
export function slidingUsage(previous: number, current: number, elapsedMs: number, windowMs: number): number {
  return previous * (1 - elapsedMs / windowMs) + current;
}

/** Applies a (possibly negative) amount: a refund larger than the current window's count comes off the previous one. */
export function addToCounts(counts: WindowCounts, amount: number): WindowCounts {
  const current = counts.current + amount;
  if (current >= 0) return { window: counts.window, previous: counts.previous, current };
  return { window: counts.window, previous: Math.max(0, counts.previous + current), current: 0 };
}

/** The decision for counts already rolled to `now` (and, for an admitted consume, including its cost). */
export function decideFromCounts(spec: WindowSpec, allowed: boolean, counts: WindowCounts, now: number): CounterDecision {
  const elapsed = elapsedInWindow(counts, now, spec.windowMs);
  const used = Math.max(0, slidingUsage(counts.previous, counts.current, elapsed, spec.windowMs));
  const remaining = Math.max(0, Math.floor(spec.limit - used));
  const resetMs = remaining > 0 ? 0 : msUntilRoom(spec, counts.previous, counts.current, elapsed);
  return { allowed, limit: spec.limit, used, remaining, resetMs };
}

/**
 * Whole ms until remaining >= 1 if nothing more is counted: while the previous window's
 * share decays, or — when the current window alone is full — into the next window as this
 * one's count decays in turn. At least 1.
 */
function msUntilRoom(spec: WindowSpec, previous: number, current: number, elapsed: number): number {
  const { windowMs, limit } = spec;
  const target = Math.max(0, limit - 1);
  // Multiply before dividing: fewer rounding surprises for round numbers.
  const at = current <= target && previous > 0
    ? (windowMs * (previous + current - target)) / previous
    : windowMs + (current > 0 ? (windowMs * (current - target)) / current : 0);
  let ms = Math.max(1, Math.ceil(at - elapsed));
  // The estimate above is exact in real numbers; nudge past floating-point rounding so that
  // at now + resetMs the same arithmetic really shows room.
  for (let i = 0; i < 3 && !hasRoomAfter(spec, previous, current, elapsed, ms); i++) ms += 1;
  return ms;
}

function hasRoomAfter(spec: WindowSpec, previous: number, current: number, elapsed: number, ms: number): boolean {
  const { windowMs, limit } = spec;
  const at = elapsed + ms;
  const used = at < windowMs
    ? slidingUsage(previous, current, at, windowMs)
    : at < 2 * windowMs ? slidingUsage(current, 0, at - windowMs, windowMs) : 0;
  return Math.floor(limit - used) >= 1;
}

/** Rejects specs and amounts that would corrupt a counter (NaN spreads silently). */
export function assertValidSpec(spec: WindowSpec, amount: number, what: 'cost' | 'amount' | null): void {
  if (!(spec.windowMs > 0) || !Number.isFinite(spec.windowMs)) throw new RangeError(`windowMs must be a positive number, got ${spec.windowMs}`);
  if (!(spec.limit > 0) || !Number.isFinite(spec.limit)) throw new RangeError(`limit must be a positive number, got ${spec.limit}`);
  if (what === 'cost' && !(amount >= 0 && Number.isFinite(amount))) throw new RangeError(`cost must be a finite number >= 0, got ${amount}`);
  if (what === 'amount' && !Number.isFinite(amount)) throw new RangeError(`amount must be a finite number, got ${amount}`);
}
