// Budget counters: one interface, two stores (memory standalone, Redis shared by replicas).
// Amounts are integers in store units (micro-USD for cost policies, tokens for token ones),
// so Redis arithmetic (HINCRBY) is exact. Each counter holds:
//   u — used: settled spend plus the reservations of requests still running,
//   s — spent: settled spend only (what status, analytics and alerts report),
//   a — set once the alert threshold was crossed in this period (one alert per period),
//   r:<token> — each open reservation, by the request's token: settlement refunds what the
//     store recorded (not what the caller believes), and a reservation whose answer was lost
//     (a timeout after Redis applied it) is cancelled by its token instead of leaking.

export interface BudgetReservation {
  /** Counter identity, e.g. `budget:{p1}:m2026-11:api_key=k1`; opaque to the store. */
  readonly key: string;
  /** credit_limit in store units. */
  readonly limit: number;
  /** What this request reserves (>= 0). */
  readonly amount: number;
  /** Seconds to keep the counter after this write; 0 keeps it. */
  readonly ttlSeconds: number;
}

export type ReserveOutcome =
  | { readonly admitted: true; /** used after the reservation, per counter */ readonly used: readonly number[] }
  | { readonly admitted: false; /** the first counter that could not cover its amount */ readonly index: number; readonly used: number };

export interface BudgetSettlement {
  readonly key: string;
  /** What the request really cost. */
  readonly actual: number;
  readonly ttlSeconds: number;
  /** alert_threshold in store units, or -1. */
  readonly alertAt: number;
}

export interface SettleOutcome {
  readonly used: number;
  readonly spent: number;
  /** This settlement crossed the alert threshold first in the period (exactly one caller sees true). */
  readonly crossed: boolean;
}

export interface BudgetStore {
  /**
   * All-or-nothing: every counter takes its amount when used + amount <= limit for all, else
   * none does. Each reservation is recorded under `token` (one per request).
   */
  reserve(reservations: readonly BudgetReservation[], token: string): Promise<ReserveOutcome>;
  /** Refunds the reservation recorded under `token` (0 when there is none) and counts `actual`. */
  settle(settlements: readonly BudgetSettlement[], token: string): Promise<SettleOutcome[]>;
  /** Drops the reservations recorded under `token`, if any (a reserve whose answer was lost). */
  cancel(keys: readonly string[], token: string): Promise<void>;
  /** Spent and used of each counter (0 when absent). */
  read(keys: readonly string[]): Promise<Array<{ used: number; spent: number }>>;
  /** Counters whose key starts with `prefix`, at most `max` of them (analytics). */
  scan(prefix: string, max: number): Promise<Array<{ key: string; used: number; spent: number }>>;
  /**
   * Keeps a small record (e.g. who created a forwarded batch) under `key` for `ttlSeconds`
   * (> 0); the first write wins, later ones are ignored. Keys must not start with `{budget}:`.
   */
  remember(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** The record kept under `key`, or undefined (never written, expired or evicted). */
  recall(key: string): Promise<string | undefined>;
  connect?(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/** Rejects amounts that would corrupt a counter. */
export function assertAmount(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a safe integer, got ${value}`);
}

interface Counter {
  used: number;
  spent: number;
  alerted: boolean;
  /** Open reservations by request token. */
  readonly open: Map<string, number>;
  /** ms since epoch after which the counter is gone; Infinity keeps it. */
  expiresAt: number;
}

/**
 * Budget counters in one process. Every call runs synchronously inside its promise, so a
 * reservation's check-and-take cannot interleave with another's. Bounded: beyond `maxKeys`
 * the oldest counter is dropped (a standalone gateway has few groups; this only stops a
 * flood of group values from growing memory without end).
 */
export class MemoryBudgetStore implements BudgetStore {
  readonly #counters = new Map<string, Counter>();
  readonly #records = new Map<string, { value: string; expiresAt: number }>();
  readonly #maxKeys: number;
  readonly #maxRecords: number;
  readonly #now: () => number;

  constructor(options: { maxKeys?: number; maxRecords?: number; now?: () => number } = {}) {
    this.#maxKeys = options.maxKeys ?? 100_000;
    this.#maxRecords = options.maxRecords ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  async reserve(reservations: readonly BudgetReservation[], token: string): Promise<ReserveOutcome> {
    for (const [index, item] of reservations.entries()) {
      assertAmount(item.amount, 'amount');
      const used = this.#get(item.key)?.used ?? 0;
      if (used + item.amount > item.limit) return { admitted: false, index, used };
    }
    const used = reservations.map((item) => {
      const counter = this.#touch(item.key, item.ttlSeconds);
      counter.used += item.amount;
      if (item.amount > 0) counter.open.set(token, item.amount);
      return counter.used;
    });
    return { admitted: true, used };
  }

  async settle(settlements: readonly BudgetSettlement[], token: string): Promise<SettleOutcome[]> {
    return settlements.map((item) => {
      assertAmount(item.actual, 'actual');
      const counter = this.#touch(item.key, item.ttlSeconds);
      const reserved = counter.open.get(token) ?? 0;
      counter.open.delete(token);
      counter.used = Math.max(0, counter.used + item.actual - reserved);
      const before = counter.spent;
      counter.spent += item.actual;
      let crossed = false;
      if (item.alertAt >= 0 && counter.spent >= item.alertAt && before < item.alertAt && !counter.alerted) {
        counter.alerted = true;
        crossed = true;
      }
      return { used: counter.used, spent: counter.spent, crossed };
    });
  }

  async cancel(keys: readonly string[], token: string): Promise<void> {
    for (const key of keys) {
      const counter = this.#get(key);
      const reserved = counter?.open.get(token);
      if (counter === undefined || reserved === undefined) continue;
      counter.open.delete(token);
      counter.used = Math.max(0, counter.used - reserved);
    }
  }

  async read(keys: readonly string[]): Promise<Array<{ used: number; spent: number }>> {
    return keys.map((key) => {
      const counter = this.#get(key);
      return { used: counter?.used ?? 0, spent: counter?.spent ?? 0 };
    });
  }

  async scan(prefix: string, max: number): Promise<Array<{ key: string; used: number; spent: number }>> {
    const found: Array<{ key: string; used: number; spent: number }> = [];
    for (const key of this.#counters.keys()) {
      if (found.length >= max) break;
      if (!key.startsWith(prefix)) continue;
      const counter = this.#get(key);
      if (counter !== undefined) found.push({ key, used: counter.used, spent: counter.spent });
    }
    return found;
  }

  async remember(key: string, value: string, ttlSeconds: number): Promise<void> {
    if ((await this.recall(key)) !== undefined) return;
    this.#records.set(key, { value, expiresAt: this.#now() + Math.max(1, ttlSeconds) * 1000 });
    // Bounded like the counters: beyond maxRecords the oldest record goes.
    if (this.#records.size > this.#maxRecords) {
      const oldest = this.#records.keys().next().value;
      if (oldest !== undefined && oldest !== key) this.#records.delete(oldest);
    }
  }

  async recall(key: string): Promise<string | undefined> {
    const record = this.#records.get(key);
    if (record === undefined) return undefined;
    if (record.expiresAt <= this.#now()) {
      this.#records.delete(key);
      return undefined;
    }
    return record.value;
  }

  async close(): Promise<void> {
    this.#counters.clear();
    this.#records.clear();
  }

  #get(key: string): Counter | undefined {
    const counter = this.#counters.get(key);
    if (counter !== undefined && counter.expiresAt <= this.#now()) {
      this.#counters.delete(key);
      return undefined;
    }
    return counter;
  }

  #touch(key: string, ttlSeconds: number): Counter {
    let counter = this.#get(key);
    const expiresAt = ttlSeconds > 0 ? this.#now() + ttlSeconds * 1000 : Number.POSITIVE_INFINITY;
    if (counter === undefined) {
      counter = { used: 0, spent: 0, alerted: false, open: new Map(), expiresAt };
      this.#counters.set(key, counter);
      if (this.#counters.size > this.#maxKeys) {
        const oldest = this.#counters.keys().next().value;
        if (oldest !== undefined && oldest !== key) this.#counters.delete(oldest);
      }
    } else {
      counter.expiresAt = expiresAt;
    }
    return counter;
  }
}
