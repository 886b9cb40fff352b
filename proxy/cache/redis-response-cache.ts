// The response cache in Redis (REDIS_URL), shared by every gateway replica.
//
// Layout under the key prefix (default `aigw:`):
//   cache:v:<key>   the encoded answer (answer-codec.ts; gzip above 8 KiB), SET … PX <ttl>
//   cache:index     sorted set: key → expiry time (ms), for sweeping and eviction
//   cache:sizes     hash: key → stored bytes
//   cache:bytes     the sum of cache:sizes
// Writes and deletes are Lua scripts, so the bookkeeping never disagrees with the values.
// Each write first sweeps up to 64 expired keys from the index, then stores, then evicts
// the entries closest to expiry (with one max_age, the oldest) until both bounds hold —
// maxEntries and maxBytes (of stored, compressed values) — so the cache cannot grow
// without limit even in a Redis shared with other data and configured `noeviction`.
// Reads are a plain GET: Redis's own expiry decides, no script on the hot path.
//
// The scripts touch keys they compute (cache:v:<key>), so this targets one Redis (or a
// primary with replicas), not Redis Cluster. Expiry uses Redis's clock (TIME), one clock
// for every replica.
//
// Failure: every call answers or rejects within commandTimeoutMs (default 100 ms) with
// CacheStoreUnavailableError — the request path serves it as a MISS (see
// proxy/redis/fail-fast-redis.ts for the connection policy).

import { decodeAnswer, encodeAnswer, DEFAULT_COMPRESS_ABOVE_BYTES } from './answer-codec.ts';
import { FailFastRedis, type RedisConnection } from '../redis/fail-fast-redis.ts';
import { DEFAULT_MAX_ENTRY_BYTES, answerBytes, assertValidTtl, positiveInteger, type CachedAnswer, type ResponseCacheStats, type ResponseCacheStore } from './response-cache-store.ts';
import { CacheStoreUnavailableError } from '../errors.ts';

export interface RedisResponseCacheOptions {
  /** The Redis connection shared with the other stores (openRedisConnection); its owner closes it. */
  connection?: RedisConnection;
  /** Or a redis:// or rediss:// URL to connect to alone. */
  url?: string;
  /** Longest a call may take before it rejects as unavailable. Default 100. */
  commandTimeoutMs?: number;
  /** Prepended to every key. Default `aigw:`. */
  keyPrefix?: string;
  /** Most entries held. Default 100 000. */
  maxEntries?: number;
  /** Most stored (compressed) bytes held. Default 512 MiB. */
  maxBytes?: number;
  /** Answers larger than this (uncompressed body + headers) are not stored. Default 2 MiB. */
  maxEntryBytes?: number;
  /** Payloads above this are gzip-compressed. Default 8 KiB. */
  compressAboveBytes?: number;
  /** How often stats() is refreshed from Redis (other replicas write too); 0 = only on own writes. Default 10 000. */
  statsRefreshMs?: number;
}

// KEYS: index, sizes, bytes. ARGV[1]: value key prefix. Shared by the three scripts.
const LUA_PRELUDE = `
local index, sizes, total = KEYS[1], KEYS[2], KEYS[3]
local prefix = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function remove(member)
  local size = tonumber(redis.call('HGET', sizes, member))
  if size then
    redis.call('DECRBY', total, size)
    redis.call('HDEL', sizes, member)
  end
  redis.call('ZREM', index, member)
  redis.call('DEL', prefix .. member)
end
local expired = redis.call('ZRANGEBYSCORE', index, '-inf', now, 'LIMIT', 0, 64)
for _, member in ipairs(expired) do remove(member) end
local function result()
  local count = redis.call('ZCARD', index)
  if count == 0 then redis.call('SET', total, 0) end
  return { count, tonumber(redis.call('GET', total)) or 0 }
end
`;

// ARGV: prefix, member, value, ttlMs, maxEntries, maxBytes → { entries, bytes }
const SET_LUA = `${LUA_PRELUDE}
local member, value, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4])
local maxEntries, maxBytes = tonumber(ARGV[5]), tonumber(ARGV[6])
remove(member)
local size = string.len(value)
redis.call('SET', prefix .. member, value, 'PX', ttl)
redis.call('ZADD', index, now + ttl, member)
redis.call('HSET', sizes, member, size)
local bytes = redis.call('INCRBY', total, size)
local count = redis.call('ZCARD', index)
while count > maxEntries or bytes > maxBytes do
  local popped = redis.call('ZPOPMIN', index)
  if #popped == 0 then break end
  local victim = popped[1]
  local victimSize = tonumber(redis.call('HGET', sizes, victim)) or 0
  redis.call('HDEL', sizes, victim)
  redis.call('DEL', prefix .. victim)
  bytes = redis.call('DECRBY', total, victimSize)
  count = count - 1
end
return result()
`;

// ARGV: prefix, member → { entries, bytes }
const DELETE_LUA = `${LUA_PRELUDE}
remove(ARGV[2])
return result()
`;

// ARGV: prefix → { entries, bytes }
const STATS_LUA = `${LUA_PRELUDE}
return result()
`;

type StatsReply = [entries: number, bytes: number];

interface ResponseCacheScripts {
  aigwCacheSet(index: string, sizes: string, total: string, prefix: string, member: string, value: Buffer, ttlMs: string, maxEntries: string, maxBytes: string): Promise<StatsReply>;
  aigwCacheDelete(index: string, sizes: string, total: string, prefix: string, member: string): Promise<StatsReply>;
  aigwCacheStats(index: string, sizes: string, total: string, prefix: string): Promise<StatsReply>;
}

/**
 * A response cache in Redis, shared across replicas, bounded by entries and bytes.
 * @example
 * const cache = new RedisResponseCache({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
 * await cache.connect(2_000);
 */
export class RedisResponseCache implements ResponseCacheStore {
  readonly #redis: FailFastRedis<ResponseCacheScripts>;
  readonly #keys: readonly [index: string, sizes: string, total: string, valuePrefix: string];
  readonly #maxEntries: string;
  readonly #maxBytes: string;
  readonly #maxEntryBytes: number;
  readonly #compressAbove: number;
  readonly #statsTimer: NodeJS.Timeout | undefined;
  #stats: ResponseCacheStats = { entries: 0, bytes: 0 };

  constructor(options: RedisResponseCacheOptions) {
    const prefix = `${options.keyPrefix ?? 'aigw:'}cache:`;
    this.#keys = [`${prefix}index`, `${prefix}sizes`, `${prefix}bytes`, `${prefix}v:`];
    this.#maxEntries = String(positiveInteger(options.maxEntries ?? 100_000, 'maxEntries'));
    this.#maxBytes = String(positiveInteger(options.maxBytes ?? 512 * 1024 * 1024, 'maxBytes'));
    this.#maxEntryBytes = positiveInteger(options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES, 'maxEntryBytes');
    this.#compressAbove = options.compressAboveBytes ?? DEFAULT_COMPRESS_ABOVE_BYTES;
    this.#redis = new FailFastRedis<ResponseCacheScripts>({
      connection: options.connection,
      url: options.url,
      commandTimeoutMs: options.commandTimeoutMs ?? 100,
      component: 'response cache',
      unavailable: (message, errorOptions) => new CacheStoreUnavailableError(message, errorOptions),
      scripts: {
        aigwCacheSet: { lua: SET_LUA, numberOfKeys: 3 },
        aigwCacheDelete: { lua: DELETE_LUA, numberOfKeys: 3 },
        aigwCacheStats: { lua: STATS_LUA, numberOfKeys: 3 },
      },
    });
    const refreshMs = options.statsRefreshMs ?? 10_000;
    if (refreshMs > 0) {
      this.#statsTimer = setInterval(() => {
        this.refreshStats().catch(() => undefined);
      }, refreshMs);
      this.#statsTimer.unref();
    }
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    const bytes = await this.#redis.call((client) => client.getBuffer(this.#keys[3] + key));
    return bytes === null ? undefined : decodeAnswer(bytes);
  }

  async set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void> {
    assertValidTtl(ttlMs);
    // Too large: not stored, and the older answer it was meant to replace is removed.
    if (answerBytes(answer) > this.#maxEntryBytes) return this.delete(key);
    const value = await encodeAnswer(answer, this.#compressAbove);
    const [index, sizes, total, prefix] = this.#keys;
    const reply = await this.#redis.call((client) =>
      client.aigwCacheSet(index, sizes, total, prefix, key, value, String(Math.ceil(ttlMs)), this.#maxEntries, this.#maxBytes),
    );
    this.#remember(reply);
  }

  async delete(key: string): Promise<void> {
    const [index, sizes, total, prefix] = this.#keys;
    this.#remember(await this.#redis.call((client) => client.aigwCacheDelete(index, sizes, total, prefix, key)));
  }

  /** The figures from this process's last write, delete or refresh (every statsRefreshMs). */
  stats(): ResponseCacheStats {
    return this.#stats;
  }

  /** Reads the entry count and bytes from Redis now (sweeping expired entries on the way). */
  async refreshStats(): Promise<ResponseCacheStats> {
    const [index, sizes, total, prefix] = this.#keys;
    this.#remember(await this.#redis.call((client) => client.aigwCacheStats(index, sizes, total, prefix)));
    return this.#stats;
  }

  /** Waits (bounded) for the connection, loads the scripts and reads the stats. */
  async connect(timeoutMs: number): Promise<void> {
    const [index, sizes, total, prefix] = this.#keys;
    await this.#redis.connect(timeoutMs, async (client) => this.#remember(await client.aigwCacheStats(index, sizes, total, prefix)));
  }

  async close(): Promise<void> {
    clearInterval(this.#statsTimer);
    await this.#redis.close();
  }

  #remember([entries, bytes]: StatsReply): void {
    this.#stats = { entries: Number(entries), bytes: Number(bytes) };
  }
}
