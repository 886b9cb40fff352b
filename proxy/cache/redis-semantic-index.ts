// The semantic index in Redis, so a paraphrase answered by one replica is a SEMANTIC_HIT on
// every other.
//
// Redis holds the entries; each replica searches a local mirror (a VectorTable) that it
// brings up to date before every search with one round trip that returns only what was
// added since its last look. Shipping a whole partition per search (1 000 × 4 KiB) would
// cost megabytes per request; scanning vectors in Lua would block Redis. Every add takes a
// number from one global counter (`sem:seq`, never reset), so "added since" is exact even
// after a partition was evicted and recreated.
//
// Layout under the key prefix (default `aigw:`):
//   sem:seq             the global sequence counter
//   sem:parts           sorted set: partition → its expiry (ms), for bounding partitions
//   sem:p:<partition>:v hash: key → [float64 expiresAt][float32 unit vector] (little-endian)
//   sem:p:<partition>:s sorted set: key → sequence number
// Bounds: maxPerPartition entries per partition (oldest go first) and maxPartitions
// partitions (the one expiring soonest goes whole), so Redis holds at most
// maxPartitions × maxPerPartition vectors — with the defaults 64 × 1 000 × 4 KiB (1 024
// dimensions) ≈ 256 MiB at most. A partition's keys expire with its last entry. The mirror
// has the same per-partition bound and its own total (maxEntries).
//
// Failure: like the response store, every call answers or rejects within commandTimeoutMs
// (default 100 ms) with CacheStoreUnavailableError; the caller treats it as a MISS.

import { endianness } from 'node:os';
import { assertValidTtl, positiveInteger } from './response-cache-store.ts';
import { FailFastRedis, type RedisConnection } from '../redis/fail-fast-redis.ts';
import { VectorTable } from './memory-semantic-index.ts';
import { unitVector, type SemanticIndex, type SemanticIndexStats, type SemanticMatch } from './semantic-cache.ts';
import { CacheStoreUnavailableError } from '../errors.ts';

export interface RedisSemanticIndexOptions {
  /** The Redis connection shared with the other stores (openRedisConnection); its owner closes it. */
  connection?: RedisConnection;
  /** Or a redis:// or rediss:// URL to connect to alone. */
  url?: string;
  /** Longest a call may take before it rejects as unavailable. Default 100. */
  commandTimeoutMs?: number;
  /** Prepended to every key. Default `aigw:`. */
  keyPrefix?: string;
  /** Most entries per partition, in Redis and in the mirror. Default 1 000. */
  maxPerPartition?: number;
  /** Most partitions in Redis. Default 64. */
  maxPartitions?: number;
  /** Most entries in this replica's mirror. Default 10 000. */
  maxMirrorEntries?: number;
}

// KEYS: seq, parts, vectors, sequence. ARGV: partition, member, blob, ttlMs, maxPerPartition,
// maxPartitions, partition key prefix → the entry's sequence number.
const ADD_LUA = `
local seqKey, parts, vectors, order = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local partition, member, blob = ARGV[1], ARGV[2], ARGV[3]
local ttl, maxPer, maxParts, prefix = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seq = redis.call('INCR', seqKey)
redis.call('HSET', vectors, member, blob)
redis.call('ZADD', order, seq, member)
local count = redis.call('ZCARD', order)
if count > maxPer then
  local victims = redis.call('ZRANGE', order, 0, count - maxPer - 1)
  redis.call('ZREMRANGEBYRANK', order, 0, count - maxPer - 1)
  for _, victim in ipairs(victims) do redis.call('HDEL', vectors, victim) end
end
local expires = now + ttl
local current = tonumber(redis.call('ZSCORE', parts, partition))
if current == nil or current < expires then
  redis.call('ZADD', parts, expires, partition)
  redis.call('PEXPIREAT', vectors, expires)
  redis.call('PEXPIREAT', order, expires)
end
redis.call('ZREMRANGEBYSCORE', parts, '-inf', now)
local held = redis.call('ZCARD', parts)
while held > maxParts do
  local popped = redis.call('ZPOPMIN', parts)
  if #popped == 0 then break end
  redis.call('DEL', prefix .. popped[1] .. ':v', prefix .. popped[1] .. ':s')
  held = held - 1
end
return seq
`;

// KEYS: vectors, sequence. ARGV: after (exclusive), limit → { member, seq, blob, … }
const SYNC_LUA = `
local found = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
if #found == 0 then return {} end
local members = {}
for i = 1, #found, 2 do members[#members + 1] = found[i] end
local blobs = redis.call('HMGET', KEYS[1], unpack(members))
local out = {}
for i = 1, #members do
  if blobs[i] then
    out[#out + 1] = members[i]
    out[#out + 1] = found[2 * i]
    out[#out + 1] = blobs[i]
  end
end
return out
`;

interface SemanticScripts {
  aigwSemAdd(seq: string, parts: string, vectors: string, order: string, partition: string, member: string, blob: Buffer, ttlMs: string, maxPer: string, maxParts: string, prefix: string): Promise<number>;
  aigwSemSyncBuffer(vectors: string, order: string, after: string, limit: string): Promise<Buffer[]>;
}

/**
 * A semantic index shared through Redis, searched in a local mirror kept in sync.
 * @example
 * const index = new RedisSemanticIndex({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
 */
export class RedisSemanticIndex implements SemanticIndex {
  readonly #redis: FailFastRedis<SemanticScripts>;
  readonly #mirror: VectorTable;
  readonly #prefix: string;
  readonly #maxPerPartition: string;
  readonly #maxPartitions: string;

  constructor(options: RedisSemanticIndexOptions) {
    this.#prefix = `${options.keyPrefix ?? 'aigw:'}sem:`;
    const maxPerPartition = positiveInteger(options.maxPerPartition ?? 1_000, 'maxPerPartition');
    this.#maxPerPartition = String(maxPerPartition);
    this.#maxPartitions = String(positiveInteger(options.maxPartitions ?? 64, 'maxPartitions'));
    this.#mirror = new VectorTable({ maxPerPartition, maxEntries: Math.max(maxPerPartition, options.maxMirrorEntries ?? 10_000) });
    this.#redis = new FailFastRedis<SemanticScripts>({
      connection: options.connection,
      url: options.url,
      commandTimeoutMs: options.commandTimeoutMs ?? 100,
      component: 'semantic index',
      unavailable: (message, errorOptions) => new CacheStoreUnavailableError(message, errorOptions),
      scripts: {
        aigwSemAdd: { lua: ADD_LUA, numberOfKeys: 4 },
        aigwSemSync: { lua: SYNC_LUA, numberOfKeys: 2, readOnly: true },
      },
    });
  }

  async search(partition: string, vector: readonly number[], threshold: number): Promise<SemanticMatch | undefined> {
    const query = unitVector(vector);
    await this.#sync(partition);
    return this.#mirror.search(partition, query, threshold);
  }

  async add(partition: string, vector: readonly number[], key: string, ttlMs: number): Promise<void> {
    assertValidTtl(ttlMs);
    const unit = unitVector(vector);
    const expiresAt = Date.now() + ttlMs;
    const [vectors, order] = this.#partitionKeys(partition);
    await this.#redis.call((client) =>
      client.aigwSemAdd(
        `${this.#prefix}seq`, `${this.#prefix}parts`, vectors, order,
        partition, key, encodeEntry(unit, expiresAt), String(Math.ceil(ttlMs)),
        this.#maxPerPartition, this.#maxPartitions, `${this.#prefix}p:`,
      ),
    );
    // Seen here at once; the next sync fetches it again (same key, replaced).
    this.#mirror.put(partition, key, unit, expiresAt);
  }

  stats(): SemanticIndexStats {
    return this.#mirror.stats();
  }

  /** Waits (bounded) for the connection and loads the scripts. */
  async connect(timeoutMs: number): Promise<void> {
    const [vectors, order] = this.#partitionKeys('warm-up');
    await this.#redis.connect(timeoutMs, (client) => client.aigwSemSyncBuffer(vectors, order, '0', '1'));
  }

  async close(): Promise<void> {
    this.#mirror.clear();
    await this.#redis.close();
  }

  /** Fetches the partition's entries added since this mirror last looked. */
  async #sync(partition: string): Promise<void> {
    const after = this.#mirror.cursor(partition);
    const [vectors, order] = this.#partitionKeys(partition);
    const reply = await this.#redis.call((client) => client.aigwSemSyncBuffer(vectors, order, String(after), this.#maxPerPartition));
    const now = Date.now();
    let cursor = after;
    for (let i = 0; i + 2 < reply.length; i += 3) {
      const member = (reply[i] as Buffer).toString('utf8');
      const seq = Number((reply[i + 1] as Buffer).toString('utf8'));
      const entry = decodeEntry(reply[i + 2] as Buffer);
      if (seq > cursor) cursor = seq;
      if (entry !== undefined && entry.expiresAt > now) this.#mirror.put(partition, member, entry.unit, entry.expiresAt);
    }
    this.#mirror.setCursor(partition, cursor);
  }

  #partitionKeys(partition: string): [vectors: string, order: string] {
    return [`${this.#prefix}p:${partition}:v`, `${this.#prefix}p:${partition}:s`];
  }
}

/** Float32Array views are platform-endian; every mainstream platform is little-endian. */
const LITTLE_ENDIAN = endianness() === 'LE';

/** [float64 LE expiresAt][float32 LE unit vector]. */
function encodeEntry(unit: Float32Array, expiresAt: number): Buffer {
  const out = Buffer.allocUnsafe(8 + unit.byteLength);
  out.writeDoubleLE(expiresAt, 0);
  if (LITTLE_ENDIAN) out.set(new Uint8Array(unit.buffer, unit.byteOffset, unit.byteLength), 8);
  else for (let i = 0; i < unit.length; i++) out.writeFloatLE(unit[i] as number, 8 + i * 4);
  return out;
}

function decodeEntry(blob: Buffer): { unit: Float32Array; expiresAt: number } | undefined {
  if (blob.length < 8 || (blob.length - 8) % 4 !== 0) return undefined;
  const unit = new Float32Array((blob.length - 8) / 4);
  // One copy into aligned memory (the reply buffer's offset need not be a multiple of 4).
  if (LITTLE_ENDIAN) new Uint8Array(unit.buffer).set(blob.subarray(8));
  else for (let i = 0; i < unit.length; i++) unit[i] = blob.readFloatLE(8 + i * 4);
  return { unit, expiresAt: blob.readDoubleLE(0) };
}
