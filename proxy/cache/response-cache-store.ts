// The response cache's store: one interface, two implementations (memory for standalone,
// Redis for several replicas), both held to test/proxy/cache/response-cache-store-suite.ts.
// The store only files opaque answers under opaque keys; what is cacheable and under
// which key is decided elsewhere (cache-key.ts, the request handler).

/** Default `max_age`: 7 days, in seconds. */
export const DEFAULT_MAX_AGE_SECONDS = 7 * 24 * 3600;

/** Values of x-gateway-cache-status. */
export const CACHE_STATUSES = ['HIT', 'SEMANTIC_HIT', 'MISS', 'REFRESH', 'DISABLED'] as const;
export type CacheStatus = (typeof CACHE_STATUSES)[number];

/** Answers larger than this (UTF-8 bytes of body + headers) are not stored, by default. */
export const DEFAULT_MAX_ENTRY_BYTES = 2 * 1024 * 1024;

/** One stored answer. */
export interface CachedAnswer {
  /** The non-streaming OpenAI JSON answer, as sent to the client. */
  readonly body: string;
  /** When it was stored (ms since the epoch); an `age` header can be derived from it. */
  readonly createdAt: number;
  /** Provider response headers worth replaying (e.g. openai-model); never credentials. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The provider that gave the answer, and the model it was asked for: a hit's log record names them. */
  readonly provider?: string;
  readonly model?: string;
}

/** Who answered a stored answer (CachedAnswer.provider / .model). */
export interface AnswerOrigin {
  readonly provider: string | undefined;
  readonly model: string | undefined;
}

export interface ResponseCacheStats {
  /** Entries held (may include expired entries not yet swept). */
  readonly entries: number;
  /** Their size: UTF-8 bytes of key, body and headers (memory) or of the stored value (Redis). */
  readonly bytes: number;
}

export interface ResponseCacheStore {
  /** The answer stored under `key`, or undefined if none or expired. */
  get(key: string): Promise<CachedAnswer | undefined>;
  /** Stores (or replaces) `answer` for `ttlMs` (> 0); an answer over the store's entry limit is silently not stored. */
  set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** Cheap, synchronous figures for the entries/bytes gauges. */
  stats(): ResponseCacheStats;
  /** Optional warm-up before serving (connect, load scripts), bounded by `timeoutMs`. */
  connect?(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}



/** Throws a RangeError unless `ttlMs` is a positive, finite number of milliseconds. */
export function assertValidTtl(ttlMs: number): void {
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) throw new RangeError(`ttlMs must be a positive, finite number, got ${ttlMs}`);
}

/** Returns `value` if it is a positive safe integer; throws a RangeError naming the option otherwise. */
export function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

/**
 * A config's `max_age` (seconds) as the ttlMs a store takes: undefined → the 7-day default;
 * 0 → 0, meaning "store nothing" (the caller skips set; lookups simply miss).
 */
export function ttlMsFromMaxAge(maxAgeSeconds: number | undefined): number {
  if (maxAgeSeconds === undefined) return DEFAULT_MAX_AGE_SECONDS * 1000;
  if (!(maxAgeSeconds >= 0) || !Number.isFinite(maxAgeSeconds)) throw new RangeError(`max_age must be a finite number >= 0, got ${maxAgeSeconds}`);
  return maxAgeSeconds * 1000;
}

/** UTF-8 bytes of an answer's body and headers (what the entry-size limit measures). */
export function answerBytes(answer: CachedAnswer): number {
  let bytes = Buffer.byteLength(answer.body);
  if (answer.headers !== undefined) {
    for (const [name, value] of Object.entries(answer.headers)) bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
  }
  return bytes;
}
