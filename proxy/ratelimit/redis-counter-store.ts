// Counters in Redis, shared by every gateway process pointed at it (REDIS_URL).
//
// Each counter is one hash, `<keyPrefix><spec.key>:<windowMs>` with fields w (fixed-window
// index), p (previous window's count), c (current window's count), expiring 2 windows
// after its last write — the longest its counts can still matter. Four Lua scripts
// (consume, reserve, peek, add) roll the windows and decide atomically inside Redis, so processes
// never race between reading and counting. ioredis sends them with EVALSHA and falls back
// to EVAL after a NOSCRIPT (a restarted or failed-over Redis).
//
// Time: the scripts use the caller's `now`, not Redis TIME — tests drive a fake clock and
// every process decides on the same arithmetic as MemoryCounterStore. The cost is clock
// skew between gateway hosts: a host s ms off shifts its window boundaries by s ms (an
// error of about s / windowMs in the previous window's weight — negligible with NTP), and
// a lagging host never rolls a counter backwards: it keeps the newer stored window.
//
// Failure: a store that cannot answer rejects within commandTimeoutMs with
// CounterStoreUnavailableError (code AIGW_ERR_STORE_UNAVAILABLE); the caller picks
// fail-open or fail-closed. Nothing is queued while disconnected (enableOfflineQueue off),
// nothing is resent after a reconnect (a resent consume would count twice), in-flight
// commands are capped, and a socket that stops answering is destroyed and reconnected
// with backoff in the background.

import { FailFastRedis, redactRedisUrl, type RedisConnection } from '../redis/fail-fast-redis.ts';
import { assertValidSpec, decideFromCounts, type CounterDecision, type RateLimitCounterStore, type Reservation, type WindowCounts, type WindowSpec } from './counter-store.ts';
import { CounterStoreUnavailableError } from '../errors.ts';

export interface RedisCounterStoreOptions {
  /** The Redis connection shared with the cache stores (openRedisConnection); its owner closes it. */
  connection?: RedisConnection;
  /** Or a redis:// or rediss:// URL to connect to alone; its password is never logged or put in errors. */
  url?: string;
  /** Longest a call may take before it rejects as unavailable. Default 50. */
  commandTimeoutMs?: number;
  /** Prepended to every key. Default `aigw:`. */
  keyPrefix?: string;
}


// Shared by the three scripts; keep it in step with rollWindow / slidingUsage /
// addToCounts in counter-store.ts (the shared suite checks both stores agree to the bit).
// %.17g round-trips a double exactly; Lua numbers are doubles.
const LUA_PRELUDE = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local state = redis.call('HMGET', key, 'w', 'p', 'c')
local w = math.floor(now / window)
local sw = tonumber(state[1])
local p = tonumber(state[2]) or 0
local c = tonumber(state[3]) or 0
if sw == nil or sw < w - 1 then
  p, c = 0, 0
elseif sw == w - 1 then
  p, c = c, 0
else
  w = sw
end
local elapsed = now - w * window
if elapsed < 0 then elapsed = 0 elseif elapsed > window then elapsed = window end
local function num(x) return string.format('%.17g', x) end
local function save()
  redis.call('HSET', key, 'w', string.format('%d', w), 'p', num(p), 'c', num(c))
  redis.call('PEXPIRE', key, 2 * window)
end
`;

// ARGV: now, windowMs, limit, cost → { admitted 0|1, previous, current, window }
const CONSUME_LUA = `${LUA_PRELUDE}
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local used = p * (1 - elapsed / window) + c
if used + cost <= limit then
  c = c + cost
  save()
  return { 1, num(p), num(c), w }
end
return { 0, num(p), num(c), w }
`;

// ARGV: now, windowMs, limit, amount → { admitted 0|1, reserved, previous, current, window }; keep in step
// with reservedAmount in counter-store.ts: while used < limit, count min(amount, limit - used).
const RESERVE_LUA = `${LUA_PRELUDE}
local limit = tonumber(ARGV[3])
local amount = tonumber(ARGV[4])
local used = p * (1 - elapsed / window) + c
if used < limit then
  local reserved = amount
  if limit - used < reserved then reserved = limit - used end
  if reserved > 0 then
    c = c + reserved
    save()
  else
    reserved = 0
  end
  return { 1, num(reserved), num(p), num(c), w }
end
return { 0, '0', num(p), num(c), w }
`;

// ARGV: now, windowMs → { previous, current, window }
const PEEK_LUA = `${LUA_PRELUDE}
return { num(p), num(c), w }
`;

// ARGV: now, windowMs, amount; a refund larger than the current count comes off the previous one.
const ADD_LUA = `${LUA_PRELUDE}
c = c + tonumber(ARGV[3])
if c < 0 then
  p = p + c
  c = 0
  if p < 0 then p = 0 end
end
save()
return 1
`;

type CountsReply = [previous: string, current: string, window: number];

/** The scripts as ioredis defines them on the client (defineCommand / `scripts`). */
interface CounterScripts {
  aigwConsume(key: string, now: string, windowMs: string, limit: string, cost: string): Promise<[admitted: number, ...CountsReply]>;
  aigwReserve(key: string, now: string, windowMs: string, limit: string, amount: string): Promise<[admitted: number, reserved: string, ...CountsReply]>;
  aigwPeek(key: string, now: string, windowMs: string): Promise<CountsReply>;
  aigwAdd(key: string, now: string, windowMs: string, amount: string): Promise<number>;
}

/**
 * Sliding-window counters in Redis, correct across several gateway processes.
 * @example
 * const store = new RedisCounterStore({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
 * const d = await store.consume({ key: 'rl:p1:key-a', windowMs: 60_000, limit: 3 }, 1, Date.now());
 */
export class RedisCounterStore implements RateLimitCounterStore {
  readonly #redis: FailFastRedis<CounterScripts>;
  readonly #keyPrefix: string;

  constructor(options: RedisCounterStoreOptions) {
    this.#keyPrefix = options.keyPrefix ?? 'aigw:';
    this.#redis = new FailFastRedis<CounterScripts>({
      connection: options.connection,
      url: options.url,
      commandTimeoutMs: options.commandTimeoutMs ?? 50,
      component: 'rate-limit counter store',
      scripts: {
        aigwConsume: { lua: CONSUME_LUA, numberOfKeys: 1 },
        aigwReserve: { lua: RESERVE_LUA, numberOfKeys: 1 },
        aigwPeek: { lua: PEEK_LUA, numberOfKeys: 1, readOnly: true },
        aigwAdd: { lua: ADD_LUA, numberOfKeys: 1 },
      },
      unavailable: (message, errorOptions) => new CounterStoreUnavailableError(message, errorOptions),
    });
  }

  async consume(spec: WindowSpec, cost: number, now: number): Promise<CounterDecision> {
    assertValidSpec(spec, cost, 'cost');
    const [admitted, ...counts] = await this.#redis.call((client) =>
      client.aigwConsume(this.#key(spec), String(now), String(spec.windowMs), String(spec.limit), String(cost)),
    );
    return decideFromCounts(spec, admitted === 1, toCounts(counts), now);
  }

  async reserve(spec: WindowSpec, amount: number, now: number): Promise<Reservation> {
    assertValidSpec(spec, amount, 'cost');
    const [admitted, reserved, ...counts] = await this.#redis.call((client) =>
      client.aigwReserve(this.#key(spec), String(now), String(spec.windowMs), String(spec.limit), String(amount)),
    );
    return { ...decideFromCounts(spec, admitted === 1, toCounts(counts), now), reserved: Number(reserved) };
  }

  async peek(spec: WindowSpec, now: number): Promise<CounterDecision> {
    assertValidSpec(spec, 0, null);
    const counts = await this.#redis.call((client) => client.aigwPeek(this.#key(spec), String(now), String(spec.windowMs)));
    const decision = decideFromCounts(spec, false, toCounts(counts), now);
    return { ...decision, allowed: decision.used < spec.limit };
  }

  async add(spec: WindowSpec, amount: number, now: number): Promise<void> {
    assertValidSpec(spec, amount, 'amount');
    await this.#redis.call((client) => client.aigwAdd(this.#key(spec), String(now), String(spec.windowMs), String(amount)));
  }

  /** Waits (bounded) for the connection and loads the scripts, so the first requests do not fail open. */
  async connect(timeoutMs: number): Promise<void> {
    await this.#redis.connect(timeoutMs, (client) => client.aigwPeek(`${this.#keyPrefix}warm-up`, String(Date.now()), '60000'));
  }

  async close(): Promise<void> {
    await this.#redis.close();
  }

  #key(spec: WindowSpec): string {
    return `${this.#keyPrefix}${spec.key}:${spec.windowMs}`;
  }
}

function toCounts([previous, current, window]: CountsReply): WindowCounts {
  return { window: Number(window), previous: Number(previous), current: Number(current) };
}

export { redactRedisUrl };
