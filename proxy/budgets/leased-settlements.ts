import type { SettleOutcome } from './budget-store.ts';

/** A settlement waiting to be written: with the next reservation, or alone shortly. */
export interface PendingSettle {
  /** numkeys, keys, per key actual/ttl/alertAt (leased: actual/taken/ttl/alertAt), token. */
  readonly args: string[];
  /** Settles from the replica's lease (SETTLE_LEASED_LUA), or a lease given back. */
  readonly leased: boolean;
  readonly resolve: (reply: number[]) => void;
  readonly reject: (error: unknown) => void;
}

interface Waiter {
  readonly actual: number;
  readonly resolve: (outcome: SettleOutcome) => void;
  readonly reject: (error: unknown) => void;
}

interface Sum {
  actual: number;
  taken: number;
  ttlSeconds: number;
  alertAt: number;
  readonly waiters: Waiter[];
}

/**
 * Settlements of requests admitted from leases (and leases given back), summed per counter
 * until the next write: one script call for all of them however many requests ended, since
 * they all draw on the one lease token. Each request still gets its own outcome: the
 * counter's `used` after the write, `spent` as it stood after its own cost, and `crossed` for
 * the one whose cost crossed the alert threshold (the script marks the crossing once).
 */
export class LeasedSettlements {
  #sums = new Map<string, Sum>();
  #waiting = 0;

  /** Requests waiting for the write. */
  get waiting(): number {
    return this.#waiting;
  }

  add(key: string, actual: number, taken: number, ttlSeconds: number, alertAt: number): Promise<SettleOutcome> {
    return new Promise((resolve, reject) => {
      const sum = this.#sum(key, ttlSeconds, alertAt);
      sum.actual += actual;
      sum.taken += taken;
      sum.waiters.push({ actual, resolve, reject });
      this.#waiting += 1;
    });
  }

  /** Unused lease given back (nobody waits for it; a failure leaves it counted: conservative). */
  release(key: string, amount: number, ttlSeconds: number): void {
    const sum = this.#sum(key, ttlSeconds, undefined);
    sum.taken += amount;
  }

  /** The write for everything summed so far (undefined: nothing), under the lease token. */
  drain(leaseToken: string): PendingSettle | undefined {
    if (this.#sums.size === 0) return undefined;
    const sums = [...this.#sums.values()];
    const args = [String(sums.length), ...this.#sums.keys()];
    for (const sum of sums) args.push(String(sum.actual), String(sum.taken), String(sum.ttlSeconds), String(sum.alertAt));
    args.push(leaseToken);
    this.#sums = new Map();
    this.#waiting = 0;
    return {
      args,
      leased: true,
      resolve: (reply) => sums.forEach((sum, index) => handOut(sum, Number(reply[index * 3]), Number(reply[index * 3 + 1]), reply[index * 3 + 2] === 1)),
      reject: (error) => {
        for (const sum of sums) for (const waiter of sum.waiters) waiter.reject(error);
      },
    };
  }

  #sum(key: string, ttlSeconds: number, alertAt: number | undefined): Sum {
    let sum = this.#sums.get(key);
    if (sum === undefined) {
      sum = { actual: 0, taken: 0, ttlSeconds, alertAt: alertAt ?? -1, waiters: [] };
      this.#sums.set(key, sum);
    } else if (alertAt !== undefined) {
      // The latest policy's retention and threshold (they change only with the policy).
      sum.ttlSeconds = ttlSeconds;
      sum.alertAt = alertAt;
    }
    return sum;
  }
}

function handOut(sum: Sum, used: number, spentAfter: number, crossed: boolean): void {
  let spent = spentAfter - sum.actual;
  let marked = !crossed;
  for (const waiter of sum.waiters) {
    const before = spent;
    spent += waiter.actual;
    const mine = !marked && waiter.actual > 0 && before < sum.alertAt && spent >= sum.alertAt;
    if (mine) marked = true;
    waiter.resolve({ used, spent, crossed: mine });
  }
}
