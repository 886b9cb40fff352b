// The response cache in process memory (standalone, or a replica without Redis).
//
// Bounded twice: by entry count and by bytes (UTF-8 size of key, body and headers — what
// the answers weigh, not the V8 heap, which adds a small constant per entry). Entries sit
// in a Map for lookup and on a doubly linked list in recency order, so a hit, a write and
// an eviction are each O(1). (Evicting by iterating the Map from its start would not be:
// V8 leaves deleted Map entries as holes that every new iterator walks over until the next
// rehash — measured at 10× slower writes under eviction.) Entries expire after their TTL: a
// read of an expired entry removes it, and every write first drops expired entries from
// the least recently used end, so dead answers do not hold the budget for long; stats()
// may still count a few.

import {
  DEFAULT_MAX_ENTRY_BYTES,
  answerBytes,
  assertValidTtl,
  positiveInteger,
  type CachedAnswer,
  type ResponseCacheStats,
  type ResponseCacheStore,
} from './response-cache-store.ts';

export interface MemoryResponseCacheOptions {
  /** Most entries held. Default 10 000. */
  maxEntries?: number;
  /** Most bytes held. Default 64 MiB. */
  maxBytes?: number;
  /** Larger answers are not stored. Default 2 MiB (never more than maxBytes). */
  maxEntryBytes?: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

interface Entry {
  readonly key: string;
  readonly answer: CachedAnswer;
  readonly expiresAt: number;
  readonly bytes: number;
  /** Towards the least recently used end. */
  older: Entry | undefined;
  /** Towards the most recently used end. */
  newer: Entry | undefined;
}

/** Expired entries looked at per write, so a write stays O(1). */
const SWEEP_PER_WRITE = 16;

/**
 * An LRU + TTL response cache bounded by entries and bytes.
 * @example
 * const cache = new MemoryResponseCache({ maxEntries: 1000, maxBytes: 16 * 1024 * 1024 });
 * await cache.set(key, { body, createdAt: Date.now() }, 3_600_000);
 */
export class MemoryResponseCache implements ResponseCacheStore {
  readonly #entries = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  readonly #now: () => number;
  #bytes = 0;
  /** Least recently used. */
  #oldest: Entry | undefined;
  /** Most recently used. */
  #newest: Entry | undefined;

  constructor(options: MemoryResponseCacheOptions = {}) {
    this.#maxEntries = positiveInteger(options.maxEntries ?? 10_000, 'maxEntries');
    this.#maxBytes = positiveInteger(options.maxBytes ?? 64 * 1024 * 1024, 'maxBytes');
    this.#maxEntryBytes = Math.min(positiveInteger(options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES, 'maxEntryBytes'), this.#maxBytes);
    this.#now = options.now ?? Date.now;
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#remove(entry);
      return undefined;
    }
    this.#unlink(entry);
    this.#append(entry);
    return entry.answer;
  }

  async set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void> {
    assertValidTtl(ttlMs);
    const previous = this.#entries.get(key);
    if (previous !== undefined) this.#remove(previous);
    const bytes = Buffer.byteLength(key) + answerBytes(answer);
    // Too large: not stored, and the older answer it was meant to replace is gone too.
    if (bytes > this.#maxEntryBytes) return;
    const now = this.#now();
    for (let i = 0; i < SWEEP_PER_WRITE && this.#oldest !== undefined && this.#oldest.expiresAt <= now; i++) this.#remove(this.#oldest);
    const entry: Entry = { key, answer, expiresAt: now + ttlMs, bytes, older: undefined, newer: undefined };
    this.#entries.set(key, entry);
    this.#append(entry);
    this.#bytes += bytes;
    while ((this.#entries.size > this.#maxEntries || this.#bytes > this.#maxBytes) && this.#oldest !== undefined) this.#remove(this.#oldest);
  }

  async delete(key: string): Promise<void> {
    const entry = this.#entries.get(key);
    if (entry !== undefined) this.#remove(entry);
  }

  stats(): ResponseCacheStats {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }

  async close(): Promise<void> {
    this.#entries.clear();
    this.#oldest = undefined;
    this.#newest = undefined;
    this.#bytes = 0;
  }

  #remove(entry: Entry): void {
    this.#entries.delete(entry.key);
    this.#unlink(entry);
    this.#bytes -= entry.bytes;
  }

  #append(entry: Entry): void {
    entry.older = this.#newest;
    entry.newer = undefined;
    if (this.#newest !== undefined) this.#newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
  }

  #unlink(entry: Entry): void {
    if (entry.older !== undefined) entry.older.newer = entry.newer;
    else this.#oldest = entry.newer;
    if (entry.newer !== undefined) entry.newer.older = entry.older;
    else this.#newest = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
  }
}
