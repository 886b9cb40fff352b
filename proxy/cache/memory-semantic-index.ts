// The semantic index in process memory, and the bounded vector table it is built on (which
// the Redis index also uses as its local mirror).
//
// Vectors are stored as unit-length float32, so a search is one dot product per entry — a
// linear scan over one partition. That is exact (no approximate-NN recall loss) and fast
// enough for the bounded partitions a cache needs: 1 000 dense 1 024-dimension entries
// scan in about 1–2 ms; a lexical query (a few dozen non-zero values) only multiplies at
// its non-zero positions, about 20× less. Bounds: maxPerPartition (the oldest entry of a full partition makes room)
// and maxEntries overall (entries of the least recently used partition go first; a
// partition left empty is dropped). Expired entries are skipped and removed when a search
// passes over them.

import { assertValidTtl, positiveInteger } from './response-cache-store.ts';
import { unitVector, type SemanticIndex, type SemanticIndexStats, type SemanticMatch } from './semantic-cache.ts';

export interface VectorTableOptions {
  /** Most entries in all partitions together. Default 10 000. */
  maxEntries?: number;
  /** Most entries in one partition (the linear-scan length). Default 1 000. */
  maxPerPartition?: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

interface VectorEntry {
  readonly unit: Float32Array;
  readonly expiresAt: number;
}

interface Partition {
  readonly entries: Map<string, VectorEntry>;
  /** For a mirror: the highest source sequence number seen (see redis-semantic-index.ts). */
  cursor: number;
}

/** Bounded partitions of unit vectors with expiry; Map order gives LRU partitions and oldest-first entries. */
export class VectorTable {
  readonly #partitions = new Map<string, Partition>();
  readonly #maxEntries: number;
  readonly #maxPerPartition: number;
  readonly #now: () => number;
  #entries = 0;

  constructor(options: VectorTableOptions = {}) {
    this.#maxEntries = positiveInteger(options.maxEntries ?? 10_000, 'maxEntries');
    this.#maxPerPartition = Math.min(positiveInteger(options.maxPerPartition ?? 1_000, 'maxPerPartition'), this.#maxEntries);
    this.#now = options.now ?? Date.now;
  }

  get maxPerPartition(): number {
    return this.#maxPerPartition;
  }

  now(): number {
    return this.#now();
  }

  /** Best live entry at or above `threshold`; newer entries win ties. */
  search(partitionId: string, query: Float32Array, threshold: number): SemanticMatch | undefined {
    const partition = this.#touch(partitionId);
    if (partition === undefined) return undefined;
    const now = this.#now();
    const nonZero = sparseIndexes(query);
    let best: SemanticMatch | undefined;
    for (const [key, entry] of partition.entries) {
      if (entry.expiresAt <= now) {
        this.#delete(partitionId, partition, key);
        continue;
      }
      const unit = entry.unit;
      if (unit.length !== query.length) continue;
      let score = 0;
      if (nonZero === undefined) {
        for (let i = 0; i < query.length; i++) score += (query[i] as number) * (unit[i] as number);
      } else {
        for (const i of nonZero) score += (query[i] as number) * (unit[i] as number);
      }
      if (score >= threshold && (best === undefined || score >= best.score)) best = { key, score };
    }
    return best;
  }

  /** Files a unit vector; the partition becomes the most recently used. */
  put(partitionId: string, key: string, unit: Float32Array, expiresAt: number): void {
    let partition = this.#touch(partitionId);
    if (partition === undefined) {
      partition = { entries: new Map(), cursor: 0 };
      this.#partitions.set(partitionId, partition);
    }
    if (partition.entries.delete(key)) this.#entries--;
    partition.entries.set(key, { unit, expiresAt });
    this.#entries++;
    // Iterators are only made when over a bound: a Map iterator walks the holes deletes
    // leave at its start (until V8 rehashes), so a loop that merely checks would not be O(1).
    if (partition.entries.size > this.#maxPerPartition) {
      for (const oldest of partition.entries.keys()) {
        if (partition.entries.size <= this.#maxPerPartition) break;
        this.#delete(partitionId, partition, oldest);
      }
    }
    // Over the total: empty the least recently used partitions, oldest entries first.
    if (this.#entries > this.#maxEntries) {
      for (const [id, victim] of this.#partitions) {
        if (this.#entries <= this.#maxEntries) break;
        for (const oldest of victim.entries.keys()) {
          if (this.#entries <= this.#maxEntries) break;
          this.#delete(id, victim, oldest);
        }
      }
    }
  }

  /** The mirror cursor of a partition (0 when the partition is not held). */
  cursor(partitionId: string): number {
    return this.#partitions.get(partitionId)?.cursor ?? 0;
  }

  setCursor(partitionId: string, cursor: number): void {
    const partition = this.#partitions.get(partitionId);
    if (partition !== undefined && cursor > partition.cursor) partition.cursor = cursor;
  }

  stats(): SemanticIndexStats {
    return { partitions: this.#partitions.size, entries: this.#entries };
  }

  clear(): void {
    this.#partitions.clear();
    this.#entries = 0;
  }

  #touch(partitionId: string): Partition | undefined {
    const partition = this.#partitions.get(partitionId);
    if (partition !== undefined) {
      this.#partitions.delete(partitionId);
      this.#partitions.set(partitionId, partition);
    }
    return partition;
  }

  #delete(partitionId: string, partition: Partition, key: string): void {
    if (!partition.entries.delete(key)) return;
    this.#entries--;
    if (partition.entries.size === 0) this.#partitions.delete(partitionId);
  }
}

/**
 * The positions of a mostly-zero vector's non-zero values (a lexical vector holds a few dozen
 * of 1 024), so a dot product touches only those; undefined for dense vectors.
 */
function sparseIndexes(vector: Float32Array): Uint32Array | undefined {
  let count = 0;
  for (let i = 0; i < vector.length; i++) if (vector[i] !== 0) count++;
  if (count * 4 > vector.length) return undefined;
  const indexes = new Uint32Array(count);
  let at = 0;
  for (let i = 0; i < vector.length; i++) if (vector[i] !== 0) indexes[at++] = i;
  return indexes;
}

/**
 * A semantic index in process memory, bounded per partition and in total.
 * @example
 * const index = new MemorySemanticIndex({ maxEntries: 10_000, maxPerPartition: 1_000 });
 * await index.add(partition, vector, exactKey, ttlMs);
 * const match = await index.search(partition, otherVector, 0.95);
 */
export class MemorySemanticIndex implements SemanticIndex {
  readonly #table: VectorTable;

  constructor(options: VectorTableOptions = {}) {
    this.#table = new VectorTable(options);
  }

  async search(partition: string, vector: readonly number[], threshold: number): Promise<SemanticMatch | undefined> {
    return this.#table.search(partition, unitVector(vector), threshold);
  }

  async add(partition: string, vector: readonly number[], key: string, ttlMs: number): Promise<void> {
    assertValidTtl(ttlMs);
    this.#table.put(partition, key, unitVector(vector), this.#table.now() + ttlMs);
  }

  stats(): SemanticIndexStats {
    return this.#table.stats();
  }

  async close(): Promise<void> {
    this.#table.clear();
  }
}
