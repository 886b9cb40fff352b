import type { BudgetReservation } from './budget-store.ts';

// Budget leases (docs/budgets.md, "Leases"). A replica reserves a slice of a counter in Redis
// ahead of time — an ordinary reservation, under the replica's own token — and admits
// requests from it in process, so a request under a budget costs no round trip before it is
// forwarded. Every admitted request's worst case is still covered by budget reserved in
// Redis, so the limit holds across replicas exactly as with one reservation per request.
// A lease is at most 1/divisor of what the counter has free when granted and is not taken
// when that is less than a few requests' worth: near the limit every request reserves in
// Redis itself. A request its lease cannot cover gives the lease back in the same write as
// its own reservation, so a replica never refuses for want of budget it holds. Unused lease
// goes back after idleMs without requests, and on close.
// This class is the replica's book only: it never talks to Redis.

export interface LeaseSettings {
  /** A lease is at most free / divisor of the counter. */
  readonly divisor: number;
  /** A lease asks for this many times the request's reservation. */
  readonly requests: number;
  /** A grant smaller than this many reservations is not taken. */
  readonly minRequests: number;
  /** Unused lease is given back after this long without a request on its counter. */
  readonly idleMs: number;
  /** After a lease was refused or failed, none is asked for this long. */
  readonly retryMs: number;
  /** Counters with a lease (more are served by Redis per request). */
  readonly maxCounters: number;
  /** Requests admitted from leases and not yet settled (more go to Redis). */
  readonly maxOpen: number;
}

export const DEFAULT_LEASE_SETTINGS: LeaseSettings = {
  divisor: 16,
  requests: 32,
  minRequests: 2,
  idleMs: 1_000,
  retryMs: 1_000,
  maxCounters: 10_000,
  maxOpen: 100_000,
};

interface Lease {
  /** Leased and not yet given to a request. */
  free: number;
  limit: number;
  ttlSeconds: number;
  /** The counter's `used` as Redis last reported it (this replica's whole lease in it). */
  used: number;
  lastUse: number;
  asking: boolean;
  retryAt: number;
}

export interface LeaseAsk {
  readonly key: string;
  readonly limit: number;
  readonly want: number;
  readonly minimum: number;
  readonly ttlSeconds: number;
}

export interface LeaseRelease {
  readonly key: string;
  readonly amount: number;
  readonly ttlSeconds: number;
}

export class BudgetLeases {
  readonly settings: LeaseSettings;
  readonly #leases = new Map<string, Lease>();
  /** Requests admitted from leases, by token: what each took. */
  readonly #open = new Map<string, readonly BudgetReservation[]>();

  constructor(settings: Partial<LeaseSettings> = {}) {
    this.settings = { ...DEFAULT_LEASE_SETTINGS, ...settings };
  }

  /** Admits from the leases when they cover every reservation: each counter's estimated `used`; else undefined. */
  take(reservations: readonly BudgetReservation[], token: string, now: number): number[] | undefined {
    if (this.#open.size >= this.settings.maxOpen) return undefined;
    for (const item of reservations) {
      const lease = this.#leases.get(item.key);
      // A zero amount still needs Redis's check (a counter overshot by a real cost refuses it).
      if (lease === undefined || item.amount <= 0 || lease.limit !== item.limit || lease.free < item.amount) return undefined;
    }
    const used: number[] = [];
    for (const item of reservations) {
      const lease = this.#leases.get(item.key) as Lease;
      lease.free -= item.amount;
      lease.lastUse = now;
      used.push(lease.used - lease.free);
    }
    this.#open.set(token, reservations);
    return used;
  }

  /** What a request admitted from leases took (undefined: it reserved in Redis); forgets it. */
  settled(token: string): readonly BudgetReservation[] | undefined {
    const taken = this.#open.get(token);
    if (taken !== undefined) this.#open.delete(token);
    return taken;
  }

  /** The unused leases of these counters, given back ahead of a reservation in Redis. */
  releaseFor(reservations: readonly BudgetReservation[]): LeaseRelease[] {
    const releases: LeaseRelease[] = [];
    for (const item of reservations) {
      const lease = this.#leases.get(item.key);
      if (lease !== undefined && lease.free > 0) {
        releases.push({ key: item.key, amount: lease.free, ttlSeconds: lease.ttlSeconds });
        lease.used -= lease.free;
        lease.free = 0;
      }
    }
    return releases;
  }

  /**
   * The leases to ask for after a request (its reservations, and each counter's `used` when
   * Redis just reported it): none while one is asked, running low or refused lately, or when
   * the counter cannot grant one.
   */
  asks(reservations: readonly BudgetReservation[], used: readonly number[] | undefined, now: number): LeaseAsk[] {
    const asks: LeaseAsk[] = [];
    const { divisor, requests, minRequests } = this.settings;
    for (const [index, item] of reservations.entries()) {
      if (item.amount <= 0) continue;
      const minimum = item.amount * minRequests;
      const seen = used?.[index];
      if (seen !== undefined && (item.limit - seen) / divisor < minimum) continue;
      let lease = this.#leases.get(item.key);
      if (lease === undefined) {
        if (this.#leases.size >= this.settings.maxCounters) continue;
        lease = { free: 0, limit: item.limit, ttlSeconds: item.ttlSeconds, used: seen ?? 0, lastUse: now, asking: false, retryAt: 0 };
        this.#leases.set(item.key, lease);
      } else if (seen !== undefined) {
        lease.used = seen;
      }
      if (lease.asking || now < lease.retryAt || lease.free >= item.amount * (requests / 2)) continue;
      // A changed limit: the old lease was given back before this request's own reservation.
      if (lease.limit !== item.limit && lease.free > 0) continue;
      lease.limit = item.limit;
      lease.ttlSeconds = item.ttlSeconds;
      lease.asking = true;
      lease.lastUse = now;
      asks.push({ key: item.key, limit: item.limit, want: item.amount * requests, minimum, ttlSeconds: item.ttlSeconds });
    }
    return asks;
  }

  /** Redis's answer to an ask: `granted` (0 when refused) and the counter's `used` after it. */
  granted(ask: LeaseAsk, granted: number, used: number, now: number): void {
    const lease = this.#leases.get(ask.key);
    if (lease === undefined) return;
    lease.asking = false;
    lease.used = used;
    if (granted > 0 && lease.limit === ask.limit) lease.free += granted;
    else if (granted <= 0) lease.retryAt = now + this.settings.retryMs;
  }

  failed(ask: LeaseAsk, now: number): void {
    const lease = this.#leases.get(ask.key);
    if (lease === undefined) return;
    lease.asking = false;
    lease.retryAt = now + this.settings.retryMs;
  }

  /** A counter's `used` as Redis reported it. */
  observe(key: string, used: number): void {
    const lease = this.#leases.get(key);
    if (lease !== undefined) lease.used = used;
  }

  /** Leases idle for idleMs, to give back; counters idle ten times as long are forgotten. */
  idle(now: number): LeaseRelease[] {
    const releases: LeaseRelease[] = [];
    for (const [key, lease] of this.#leases) {
      if (lease.asking || now - lease.lastUse < this.settings.idleMs) continue;
      if (lease.free > 0) {
        releases.push({ key, amount: lease.free, ttlSeconds: lease.ttlSeconds });
        lease.used -= lease.free;
        lease.free = 0;
      } else if (now - lease.lastUse >= this.settings.idleMs * 10) {
        this.#leases.delete(key);
      }
    }
    return releases;
  }

  /** Every unused lease, to give back (closing). */
  releaseAll(): LeaseRelease[] {
    const releases: LeaseRelease[] = [];
    for (const [key, lease] of this.#leases) {
      if (lease.free > 0) releases.push({ key, amount: lease.free, ttlSeconds: lease.ttlSeconds });
      lease.free = 0;
    }
    return releases;
  }

  /** Counters holding a lease, and requests admitted from leases awaiting settlement. */
  get size(): { counters: number; open: number } {
    return { counters: this.#leases.size, open: this.#open.size };
  }
}
