import { randomUUID } from 'node:crypto';
import { CounterStoreUnavailableError } from '../errors.ts';
import { FailFastRedis, type RedisConnection } from '../redis/fail-fast-redis.ts';
import { BudgetLeases, type LeaseAsk, type LeaseRelease, type LeaseSettings } from './budget-leases.ts';
import { LeasedSettlements, type PendingSettle } from './leased-settlements.ts';
import { assertAmount, type BudgetReservation, type BudgetSettlement, type BudgetStore, type ReserveOutcome, type SettleOutcome } from './budget-store.ts';

// Budget counters in Redis, shared by every gateway replica: one hash per (policy, period,
// group) with fields u (used: spent + open reservations), s (spent) and a (alerted).
// Reservations across several policies are one Lua script over all their keys, so they are
// all-or-nothing and no replica can slip in between the check and the take. Keys carry the
// `{budget}` hash tag so the script's keys share a slot on a Redis Cluster too.

/**
 * The end of a settlement's loop over its counters: `used` moves by the real cost minus what
 * is given back (`refund`, a Lua variable), `spent` by the cost; the alert threshold is marked
 * once (HSETNX) by the write that crosses it; {used, spent, crossed} per counter.
 */
function spendAndReply(refund: string): string {
  return `  local used = redis.call('HINCRBY', KEYS[i], 'u', actual - ${refund})
  if used < 0 then redis.call('HSET', KEYS[i], 'u', 0); used = 0 end
  local spent = redis.call('HINCRBY', KEYS[i], 's', actual)
  local crossed = 0
  if alertAt >= 0 and actual > 0 and spent >= alertAt and spent - actual < alertAt then
    crossed = redis.call('HSETNX', KEYS[i], 'a', 1)
  end
  if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) end
  out[#out + 1] = used
  out[#out + 1] = spent
  out[#out + 1] = crossed
end
return out
`;
}

// KEYS: counters; ARGV per key: limit, amount, ttl; then the request's token.
export const RESERVE_LUA = `
local n = #KEYS
local field = 'r:' .. ARGV[n * 3 + 1]
for i = 1, n do
  local limit = tonumber(ARGV[i * 3 - 2])
  local amount = tonumber(ARGV[i * 3 - 1])
  local used = tonumber(redis.call('HGET', KEYS[i], 'u') or '0')
  if used + amount > limit then return {0, i, used} end
end
local out = {1}
for i = 1, n do
  local used = redis.call('HINCRBY', KEYS[i], 'u', ARGV[i * 3 - 1])
  if tonumber(ARGV[i * 3 - 1]) > 0 then redis.call('HSET', KEYS[i], field, ARGV[i * 3 - 1]) end
  local ttl = tonumber(ARGV[i * 3])
  if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) end
  out[#out + 1] = used
end
return out
`;

// KEYS: counters; ARGV per key: actual, ttl, alertAt (-1: none); then the request's token.
// What is refunded is the reservation Redis recorded under the token (none: 0).
export const SETTLE_LUA = `
local out = {}
local field = 'r:' .. ARGV[#KEYS * 3 + 1]
for i = 1, #KEYS do
  local reserved = tonumber(redis.call('HGET', KEYS[i], field) or '0')
  if reserved > 0 then redis.call('HDEL', KEYS[i], field) end
  local actual = tonumber(ARGV[i * 3 - 2])
  local ttl = tonumber(ARGV[i * 3 - 1])
  local alertAt = tonumber(ARGV[i * 3])
${spendAndReply('reserved')}`;

// A lease (budget-leases.ts) is a reservation under the replica's lease token that grows.
// KEYS: the counter; ARGV: limit, want, minimum, divisor, ttl, lease token. Grants
// min(want, free / divisor) when that is at least the minimum, else nothing: {granted, used}.
export const LEASE_LUA = `
local used = tonumber(redis.call('HGET', KEYS[1], 'u') or '0')
local grant = math.min(tonumber(ARGV[2]), math.floor((tonumber(ARGV[1]) - used) / tonumber(ARGV[4])))
if grant < tonumber(ARGV[3]) or grant <= 0 then return {0, used} end
used = redis.call('HINCRBY', KEYS[1], 'u', grant)
redis.call('HINCRBY', KEYS[1], 'r:' .. ARGV[6], grant)
local ttl = tonumber(ARGV[5])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return {grant, used}
`;

// Settles requests admitted from a lease, and gives unused lease back (actual 0).
// KEYS: counters; ARGV per key: actual, taken (what the request took from the lease), ttl,
// alertAt; then the lease token. Takes at most what the lease still holds in Redis.
export const SETTLE_LEASED_LUA = `
local out = {}
local field = 'r:' .. ARGV[#KEYS * 4 + 1]
for i = 1, #KEYS do
  local held = tonumber(redis.call('HGET', KEYS[i], field) or '0')
  local taken = math.min(tonumber(ARGV[i * 4 - 2]), held)
  if taken > 0 then
    if taken >= held then redis.call('HDEL', KEYS[i], field) else redis.call('HINCRBY', KEYS[i], field, -taken) end
  else
    taken = 0
  end
  local actual = tonumber(ARGV[i * 4 - 3])
  local ttl = tonumber(ARGV[i * 4 - 1])
  local alertAt = tonumber(ARGV[i * 4])
${spendAndReply('taken')}`;

// KEYS: counters; ARGV: the request's token. Undoes a reservation whose answer was lost.
const CANCEL_LUA = `
local field = 'r:' .. ARGV[1]
for i = 1, #KEYS do
  local reserved = tonumber(redis.call('HGET', KEYS[i], field) or '0')
  if reserved > 0 then
    redis.call('HDEL', KEYS[i], field)
    local used = redis.call('HINCRBY', KEYS[i], 'u', -reserved)
    if used < 0 then redis.call('HSET', KEYS[i], 'u', 0) end
  end
end
return 1
`;

interface BudgetScripts {
  aigwBudgetReserve(...args: string[]): Promise<number[]>;
  aigwBudgetSettle(...args: string[]): Promise<number[]>;
  aigwBudgetCancel(...args: string[]): Promise<number>;
  aigwBudgetLease(...args: string[]): Promise<number[]>;
  aigwBudgetSettleLeased(...args: string[]): Promise<number[]>;
}


// One round trip per request. A settlement is sent in the same write as the next reservation
// (settlements first, so refunds land before the check), or alone after SETTLE_DELAY_MS when
// none comes: sent on its own it costs the gateway a second write and reply. The scripts skip
// the connection's auto-pipeline, which sends one batch at a time: a reservation would wait
// there for the reply to the batch before it (e.g. the last settlement), two round trips.
const SETTLE_DELAY_MS = 5;
/** Beyond this many waiting settlements they are sent at once (bounded pipelines). */
const MAX_PENDING_SETTLES = 64;

export interface RedisBudgetStoreOptions {
  readonly connection?: RedisConnection;
  readonly url?: string;
  /** Prepended to every key (tests isolate runs with it). */
  readonly keyPrefix?: string;
  readonly commandTimeoutMs?: number;
  /** Admit from leases (budget-leases.ts; default on), with these settings; false: a round trip per request. */
  readonly leases?: Partial<LeaseSettings> | false;
}

export class RedisBudgetStore implements BudgetStore {
  readonly #redis: FailFastRedis<BudgetScripts>;
  readonly #prefix: string;
  #pending: PendingSettle[] = [];
  readonly #leased = new LeasedSettlements();
  #flushTimer: NodeJS.Timeout | undefined;
  readonly #leases: BudgetLeases | undefined;
  /** This replica's leases are recorded in Redis under it (r:<token>), like a request's reservation. */
  readonly #leaseToken = `lease-${randomUUID()}`;
  #sweepTimer: NodeJS.Timeout | undefined;
  /** Lease asks awaiting Redis's answer (close waits for them, then gives every lease back). */
  readonly #asking = new Set<Promise<void>>();
  #closing = false;

  constructor(options: RedisBudgetStoreOptions) {
    this.#prefix = options.keyPrefix ?? 'aigw:';
    this.#leases = options.leases === false ? undefined : new BudgetLeases(options.leases ?? {});
    this.#redis = new FailFastRedis<BudgetScripts>({
      connection: options.connection,
      url: options.url,
      commandTimeoutMs: options.commandTimeoutMs ?? 100,
      component: 'budget store',
      autoPipeline: false,
      scripts: {
        aigwBudgetReserve: { lua: RESERVE_LUA },
        aigwBudgetSettle: { lua: SETTLE_LUA },
        aigwBudgetCancel: { lua: CANCEL_LUA },
        aigwBudgetLease: { lua: LEASE_LUA },
        aigwBudgetSettleLeased: { lua: SETTLE_LEASED_LUA },
      },
      unavailable: (message, errorOptions) => new CounterStoreUnavailableError(message, errorOptions),
    });
  }

  async reserve(reservations: readonly BudgetReservation[], token: string): Promise<ReserveOutcome> {
    if (reservations.length === 0) return { admitted: true, used: [] };
    const leases = this.#leases;
    if (leases !== undefined) {
      const used = leases.take(reservations, token, Date.now());
      if (used !== undefined) {
        this.#askLeases(leases, reservations, undefined);
        return { admitted: true, used };
      }
      // Not covered: this replica's unused leases go back ahead of the reservation (same write).
      for (const release of leases.releaseFor(reservations)) this.#release(release);
    }
    const args = [String(reservations.length)];
    for (const item of reservations) args.push(this.#prefix + item.key);
    for (const item of reservations) {
      assertAmount(item.amount, 'amount');
      args.push(String(item.limit), String(item.amount), String(item.ttlSeconds));
    }
    args.push(token);
    const reply = (await this.#send(this.#takePending(), args)) as number[];
    if (reply[0] === 1) {
      const used = reply.slice(1).map(Number);
      if (leases !== undefined) this.#askLeases(leases, reservations, used);
      return { admitted: true, used };
    }
    return { admitted: false, index: Number(reply[1]) - 1, used: Number(reply[2]) };
  }

  /** Resolves once Redis applied the settlement: with the next reservation, or alone within SETTLE_DELAY_MS. */
  async settle(settlements: readonly BudgetSettlement[], token: string): Promise<SettleOutcome[]> {
    if (settlements.length === 0) return [];
    for (const item of settlements) assertAmount(item.actual, 'actual');
    const taken = this.#leases?.settled(token);
    if (taken !== undefined) {
      const outcomes = settlements.map((item) =>
        this.#leased.add(this.#prefix + item.key, item.actual, taken.find((reserved) => reserved.key === item.key)?.amount ?? 0, item.ttlSeconds, item.alertAt),
      );
      this.#written();
      const settled = await Promise.all(outcomes);
      settlements.forEach((item, index) => this.#leases?.observe(item.key, (settled[index] as SettleOutcome).used));
      return settled;
    }
    const args = [String(settlements.length)];
    for (const item of settlements) args.push(this.#prefix + item.key);
    for (const item of settlements) args.push(String(item.actual), String(item.ttlSeconds), String(item.alertAt));
    args.push(token);
    const reply = await new Promise<number[]>((resolve, reject) => {
      this.#pending.push({ args, leased: false, resolve, reject });
      this.#written();
    });
    if (this.#leases !== undefined) settlements.forEach((item, index) => this.#leases?.observe(item.key, Number(reply[index * 3])));
    return settlements.map((_, index) => ({
      used: Number(reply[index * 3]),
      spent: Number(reply[index * 3 + 1]),
      crossed: reply[index * 3 + 2] === 1,
    }));
  }

  async cancel(keys: readonly string[], token: string): Promise<void> {
    if (keys.length === 0) return;
    const prefixed = keys.map((key) => this.#prefix + key);
    await this.#redis.call((client) => client.aigwBudgetCancel(String(prefixed.length), ...prefixed, token));
  }

  async read(keys: readonly string[]): Promise<Array<{ used: number; spent: number }>> {
    if (keys.length === 0) return [];
    const replies = await this.#redis.call((client) => Promise.all(keys.map((key) => client.hmget(this.#prefix + key, 'u', 's'))));
    return replies.map(([used, spent]) => ({ used: Number(used ?? 0), spent: Number(spent ?? 0) }));
  }

  async scan(prefix: string, max: number): Promise<Array<{ key: string; used: number; spent: number }>> {
    const pattern = `${globEscape(this.#prefix + prefix)}*`;
    const keys: string[] = [];
    let cursor = '0';
    // Bounded: at most a few SCAN pages, at most `max` keys.
    for (let page = 0; page < 20 && keys.length < max; page++) {
      const [next, batch] = await this.#redis.call((client) => client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000));
      keys.push(...batch.slice(0, max - keys.length));
      cursor = next;
      if (cursor === '0') break;
    }
    const stripped = keys.map((key) => key.slice(this.#prefix.length));
    const values = await this.read(stripped);
    return stripped.map((key, index) => ({ key, ...(values[index] as { used: number; spent: number }) }));
  }

  async remember(key: string, value: string, ttlSeconds: number): Promise<void> {
    await this.#redis.call((client) => client.set(this.#prefix + key, value, 'EX', Math.max(1, Math.ceil(ttlSeconds)), 'NX'));
  }

  async recall(key: string): Promise<string | undefined> {
    return (await this.#redis.call((client) => client.get(this.#prefix + key))) ?? undefined;
  }

  async connect(timeoutMs: number): Promise<void> {
    await this.#redis.connect(timeoutMs, (client) => client.aigwBudgetReserve('1', `${this.#prefix}{budget}:warm-up`, '1', '0', '60', 'warm-up'));
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
    await Promise.all(this.#asking);
    for (const release of this.#leases?.releaseAll() ?? []) this.#leased.release(this.#prefix + release.key, release.amount, release.ttlSeconds);
    // Waiting settlements go out before the connection closes (their failures are the callers').
    await this.#send(this.#takePending()).catch(() => undefined);
    await this.#redis.close();
  }

  /** Something waits to be written: at once beyond MAX_PENDING_SETTLES, else within SETTLE_DELAY_MS. */
  #written(): void {
    if (this.#pending.length + this.#leased.waiting >= MAX_PENDING_SETTLES) this.#flush();
    // Not unref'd: a process whose loop empties still sends what it owes before exiting.
    else this.#flushTimer ??= setTimeout(() => this.#flush(), SETTLE_DELAY_MS);
  }

  /** Unused lease given back with the next write (its failure leaves it counted: conservative). */
  #release(release: LeaseRelease): void {
    this.#leased.release(this.#prefix + release.key, release.amount, release.ttlSeconds);
    this.#written();
  }

  /** Asks Redis for the leases worth having after this request; off the request's path. */
  #askLeases(leases: BudgetLeases, reservations: readonly BudgetReservation[], used: readonly number[] | undefined): void {
    if (this.#closing) return;
    const asks = leases.asks(reservations, used, Date.now());
    for (const ask of asks) this.#askLease(leases, ask);
  }

  #askLease(leases: BudgetLeases, ask: LeaseAsk): void {
    const args = ['1', this.#prefix + ask.key, String(ask.limit), String(ask.want), String(ask.minimum), String(leases.settings.divisor), String(ask.ttlSeconds), this.#leaseToken];
    const asked = this.#redis.call((client) => client.aigwBudgetLease(...args)).then(
      (reply) => leases.granted(ask, Number(reply[0]), Number(reply[1]), Date.now()),
      // A lease lost to a timeout after Redis granted it stays counted (conservative).
      () => leases.failed(ask, Date.now()),
    );
    // Every counter in the book is swept: idle leases go back, and counters refused a lease are
    // forgotten (else they would fill maxCounters for good).
    this.#sweepTimer ??= setInterval(() => this.#sweep(leases), leases.settings.idleMs).unref();
    this.#asking.add(asked);
    void asked.finally(() => this.#asking.delete(asked));
  }

  #sweep(leases: BudgetLeases): void {
    for (const release of leases.idle(Date.now())) this.#release(release);
  }

  #takePending(): PendingSettle[] {
    if (this.#flushTimer !== undefined) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
    }
    const leased = this.#leased.drain(this.#leaseToken);
    const pending = this.#pending;
    if (pending.length > 0) this.#pending = [];
    return leased === undefined ? pending : [...pending, leased];
  }

  #flush(): void {
    this.#send(this.#takePending()).catch(() => undefined);
  }

  /**
   * Writes the waiting settlements, then the reservation if any, in one write (the socket is
   * corked around them): one write and one reply read. Returns the reservation's reply.
   */
  async #send(settles: readonly PendingSettle[], reserve?: readonly string[]): Promise<number[] | undefined> {
    if (settles.length === 0 && reserve === undefined) return undefined;
    let written = false;
    try {
      return await this.#redis.call((client) => {
        const socket = client.stream;
        socket.cork();
        try {
          // Riding with a reservation, a settlement's outcome (metrics, alerts) is handed back after
          // the reservation's caller has gone on: it is not that request's work.
          const applied = reserve === undefined ? (settle: PendingSettle, reply: number[]) => settle.resolve(reply) : handBackLater;
          const settled = settles.map((settle) =>
            (settle.leased ? client.aigwBudgetSettleLeased(...settle.args) : client.aigwBudgetSettle(...settle.args)).then(
              (reply) => applied(settle, reply),
              (cause: unknown) => settle.reject(unavailable(cause)),
            ),
          );
          written = true;
          // Alone, the call lasts until the settlements' replies (bounded by its deadline like any call).
          return reserve === undefined ? Promise.all(settled).then(() => undefined) : client.aigwBudgetReserve(...reserve);
        } finally {
          socket.uncork();
        }
      });
    } catch (error) {
      // Written settlements answer for themselves (each command has the connection's deadline).
      if (!written) for (const settle of settles) settle.reject(error);
      throw error;
    }
  }
}

function handBackLater(settle: PendingSettle, reply: number[]): void {
  setImmediate(settle.resolve, reply);
}

/** A settlement's own failure, in the shape of the store's other failures. */
function unavailable(cause: unknown): Error {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new CounterStoreUnavailableError(`budget store unavailable: ${reason}`, { cause });
}

function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}
