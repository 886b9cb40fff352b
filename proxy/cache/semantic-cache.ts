// Semantic mode's pieces: what turns text into a vector (Embedder), how two vectors compare
// (cosine), and where vectors are searched (SemanticIndex — memory-semantic-index.ts,
// redis-semantic-index.ts).
//
// The flow the request path follows on an exact-key miss: embed conversationText() (the
// last message), search the request's semanticPartition() for the nearest vector with a
// cosine at or above the threshold, and read the answer stored under that entry's key from
// the response store (a SEMANTIC_HIT). After a fresh provider answer is stored under its
// exact key, add(partition, vector, exactKey, ttl) makes it findable by neighbours.
//
// Embedders: any provider's embeddings endpoint (EmbeddingsEndpointEmbedder), or, when none
// is configured, LexicalEmbedder — a local hashing-trick vectorizer that measures how much
// wording two texts share, not what they mean. See docs/caching.md before lowering the
// threshold with it.

/** Default cosine similarity a neighbour needs to be served. */
export const DEFAULT_SEMANTIC_THRESHOLD = 0.95;

/** Turns text into a vector. */
export interface Embedder {
  /** Names the embedder and its settings; part of the partition, so vectors of different embedders never meet. */
  readonly id: string;
  embed(text: string): Promise<number[]>;
}

export interface SemanticMatch {
  /** The response-store key of the neighbour's answer. */
  readonly key: string;
  readonly score: number;
}

export interface SemanticIndexStats {
  readonly partitions: number;
  readonly entries: number;
}

/** Nearest-neighbour search over vectors, within a partition. */
export interface SemanticIndex {
  /** The most similar live entry of `partition` whose cosine with `vector` is >= threshold. */
  search(partition: string, vector: readonly number[], threshold: number): Promise<SemanticMatch | undefined>;
  /** Files `vector` under `key` in `partition` for `ttlMs` (replacing an entry with the same key). */
  add(partition: string, vector: readonly number[], key: string, ttlMs: number): Promise<void>;
  /** What this process holds (for Redis: its local mirror). */
  stats(): SemanticIndexStats;
  close(): Promise<void>;
}

/** Cosine similarity of two vectors; 0 when their lengths differ or either is all zeros. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}

/** The vector scaled to length 1, as float32 (what the indexes store); all zeros stays all zeros. */
export function unitVector(vector: ArrayLike<number>): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += (vector[i] as number) ** 2;
  const out = new Float32Array(vector.length);
  if (norm === 0 || !Number.isFinite(norm)) return out;
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < vector.length; i++) out[i] = (vector[i] as number) * scale;
  return out;
}

export interface LexicalEmbedderOptions {
  /** Vector length (hash buckets). Default 1024. */
  dimensions?: number;
}

/**
 * A local vectorizer for when no embeddings provider is configured — lexical similarity,
 * not meaning. Text is NFKC-normalised and lower-cased, split into words (runs of letters
 * and digits; each Han, Hiragana or Katakana character is a word of its own), and every
 * word and every pair of adjacent words is hashed (FNV-1a) into one of `dimensions` buckets
 * with a hash-chosen sign (the "hashing trick": no vocabulary, deterministic, unbiased
 * collisions). The counts are L2-normalised, so the cosine of two vectors is the share of
 * words and word pairs the texts have in common. Case, punctuation and spacing changes
 * score 1; one word changed in a 30-word prompt still scores about 0.95 — and "capital of
 * France" vs "capital of Germany" is as close as a true paraphrase, since it cannot know
 * which word matters.
 * @example
 * const embedder = new LexicalEmbedder();
 * cosine(await embedder.embed('Hello, world!'), await embedder.embed('hello world')); // 1
 */
export class LexicalEmbedder implements Embedder {
  readonly id: string;
  readonly #dimensions: number;

  constructor(options: LexicalEmbedderOptions = {}) {
    const dimensions = options.dimensions ?? 1024;
    if (!Number.isSafeInteger(dimensions) || dimensions <= 0) throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
    this.#dimensions = dimensions;
    this.id = `lexical-v1:${dimensions}`;
  }

  async embed(text: string): Promise<number[]> {
    return this.vectorize(text);
  }

  /** The vector of `text`, synchronously. */
  vectorize(text: string): number[] {
    const vector = new Array<number>(this.#dimensions).fill(0);
    const words = text.normalize('NFKC').toLowerCase().match(WORD) ?? [];
    let previous: string | undefined;
    for (const word of words) {
      this.#count(vector, word);
      if (previous !== undefined) this.#count(vector, `${previous} ${word}`);
      previous = word;
    }
    return Array.from(unitVector(vector));
  }

  #count(vector: number[], feature: string): void {
    const hash = fnv1a(feature);
    const bucket = (hash & 0x7fffffff) % this.#dimensions;
    vector[bucket] = (vector[bucket] as number) + (hash < 0 ? -1 : 1);
  }
}

/** Words: single Han/Hiragana/Katakana characters (scripts written without spaces), else runs of letters and digits. */
const WORD = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]|[\p{L}\p{N}\p{M}]+/gu;

/** 32-bit FNV-1a over UTF-16 code units, as a signed int (the sign bit picks the sign). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}

/**
 * The first vector of an OpenAI-shaped embeddings answer (`data[0].embedding`, as numbers or
 * as base64 float32), or undefined if the answer has none.
 */
export function vectorFromEmbeddingsAnswer(answer: unknown): number[] | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const data = (answer as { data?: unknown }).data;
  if (!Array.isArray(data) || data.length === 0) return undefined;
  const first: unknown = data[0];
  if (typeof first !== 'object' || first === null) return undefined;
  const embedding = (first as { embedding?: unknown }).embedding;
  if (Array.isArray(embedding)) {
    return embedding.every((x) => typeof x === 'number' && Number.isFinite(x)) ? (embedding as number[]) : undefined;
  }
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64');
    if (bytes.length === 0 || bytes.length % 4 !== 0) return undefined;
    return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
  }
  return undefined;
}

/**
 * An embedder backed by an embeddings endpoint: `request` sends `{ model, input: text }`
 * wherever the caller routes it and resolves with the provider's OpenAI-shaped answer.
 * @example
 * new EmbeddingsEndpointEmbedder('openai-prod/text-embedding-3-small', (text) => callEmbeddings(text));
 */
export class EmbeddingsEndpointEmbedder implements Embedder {
  readonly id: string;
  readonly #request: (text: string) => Promise<unknown>;

  constructor(id: string, request: (text: string) => Promise<unknown>) {
    this.id = `endpoint:${id}`;
    this.#request = request;
  }

  async embed(text: string): Promise<number[]> {
    const vector = vectorFromEmbeddingsAnswer(await this.#request(text));
    if (vector === undefined) throw new TypeError(`embeddings answer for ${this.id} holds no vector`);
    return vector;
  }
}
