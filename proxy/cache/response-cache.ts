// The cache's decisions for one request, over the store, the semantic index and the
// embedder: lookup() before the strategy walk, save() after a fresh answer. It never
// throws: a store, index or embedder that fails is reported through onError (log it,
// count it) and the request goes on as a MISS — the cache can slow nothing down beyond
// its own short timeouts, and never fails a request.
//
//   no cache config, or an endpoint that is not cached (responses, count_tokens) → DISABLED
//   x-gateway-cache-force-refresh: true                              → REFRESH (no read; save replaces)
//   an answer under the exact key                                    → HIT
//   semantic mode: a neighbour at or above the threshold whose answer is still stored
//                                                                    → SEMANTIC_HIT
//   otherwise                                                        → MISS (save stores)

import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { conversationText, semanticPartition, simpleCacheKey } from './cache-key.ts';
import { ttlMsFromMaxAge, type AnswerOrigin, type CachedAnswer, type CacheStatus, type ResponseCacheStore } from './response-cache-store.ts';
import { DEFAULT_SEMANTIC_THRESHOLD, type Embedder, type SemanticIndex } from './semantic-cache.ts';

/** What the cache needs to know about a request (after prompt rendering and override_params). */
export interface CacheRequest {
  /** The effective `cache.mode` for the target; undefined when caching is off → DISABLED. */
  readonly mode: 'simple' | 'semantic' | undefined;
  /** The effective `cache.max_age` in seconds; undefined → 7 days; 0 → nothing is stored. */
  readonly maxAgeSeconds?: number | undefined;
  /** The calling key's workspace: no entry is shared across workspaces. */
  readonly workspace: string;
  /** The calling key's organisation, when it has one. */
  readonly organisation?: string | undefined;
  readonly endpoint: InferenceEndpoint;
  /** Target identity (provider, host, credential). */
  readonly identity: string;
  readonly body: Readonly<Record<string, unknown>>;
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
  /** x-gateway-cache-namespace: narrows within the workspace and target. */
  readonly namespace?: string | undefined;
  /** x-gateway-cache-force-refresh. */
  readonly forceRefresh?: boolean | undefined;
}

export interface CacheLookup {
  readonly status: CacheStatus;
  /** The stored answer, for HIT and SEMANTIC_HIT. */
  readonly answer?: CachedAnswer;
  /** The exact key (all statuses but DISABLED); save() stores under it. */
  readonly key?: string;
  /** Semantic mode: the partition and the embedding computed during lookup, reused by save(). */
  readonly partition?: string;
  readonly vector?: readonly number[];
  /** For logs: the cosine of a SEMANTIC_HIT. */
  readonly score?: number;
}

export type CacheOperation = 'get' | 'set' | 'embed' | 'search' | 'add';

export interface ResponseCacheOptions {
  readonly store: ResponseCacheStore;
  /** Semantic mode needs both; without them semantic configs behave as simple ones. */
  readonly index?: SemanticIndex | undefined;
  readonly embedder?: Embedder | undefined;
  /** Default cosine a neighbour needs. Default 0.95. */
  readonly threshold?: number | undefined;
  /** Told about every failed store, index or embedder call (the request carries on as a MISS). */
  readonly onError?: ((error: unknown, operation: CacheOperation) => void) | undefined;
  readonly now?: (() => number) | undefined;
}

/** Endpoints whose answers are cached: chat completions, completions, embeddings, Anthropic messages. */
export function isCacheableEndpoint(endpoint: InferenceEndpoint): boolean {
  return endpoint === 'chat.completions' || endpoint === 'completions' || endpoint === 'embeddings' || endpoint === 'messages';
}

/**
 * The cache's lookup and save for the request path.
 * @example
 * const lookup = await cache.lookup(request);
 * if (lookup.answer) return reply(lookup.answer);               // HIT / SEMANTIC_HIT
 * const body = await callProvider();
 * if (ok(body)) void cache.save(request, lookup, body);          // MISS / REFRESH
 */
export class ResponseCache {
  readonly #store: ResponseCacheStore;
  readonly #index: SemanticIndex | undefined;
  readonly #embedder: Embedder | undefined;
  readonly #threshold: number;
  readonly #onError: (error: unknown, operation: CacheOperation) => void;
  readonly #now: () => number;

  constructor(options: ResponseCacheOptions) {
    this.#store = options.store;
    this.#index = options.index;
    this.#embedder = options.embedder;
    this.#threshold = options.threshold ?? DEFAULT_SEMANTIC_THRESHOLD;
    this.#onError = options.onError ?? (() => undefined);
    this.#now = options.now ?? Date.now;
  }

  async lookup(request: CacheRequest): Promise<CacheLookup> {
    if (request.mode === undefined || !isCacheableEndpoint(request.endpoint)) return { status: 'DISABLED' };
    const key = simpleCacheKey(request);
    if (request.forceRefresh === true) return { status: 'REFRESH', key };
    let answer: CachedAnswer | undefined;
    try {
      answer = await this.#store.get(key);
    } catch (error) {
      // The store is down: a semantic search would only lead to it again.
      this.#onError(error, 'get');
      return { status: 'MISS', key };
    }
    if (answer !== undefined) return { status: 'HIT', answer, key };
    const semantic = await this.#semanticTarget(request);
    if (semantic === undefined) return { status: 'MISS', key };
    const { partition, vector } = semantic;
    const index = this.#index as SemanticIndex;
    try {
      const match = await index.search(partition, vector, this.#threshold);
      const neighbour = match === undefined ? undefined : await this.#store.get(match.key);
      if (match !== undefined && neighbour !== undefined) return { status: 'SEMANTIC_HIT', answer: neighbour, key, partition, vector, score: match.score };
    } catch (error) {
      this.#onError(error, 'search');
    }
    return { status: 'MISS', key, partition, vector };
  }

  /**
   * Stores a fresh, successful (2xx, non-error) answer for a MISS or REFRESH — `body` is the
   * non-streaming JSON (for a stream: StreamAssembler's result) — and files it in the
   * semantic index. Does nothing for other statuses or max_age 0. Never rejects.
   */
  async save(request: CacheRequest, lookup: CacheLookup, body: string, headers?: Readonly<Record<string, string>>, origin?: AnswerOrigin): Promise<void> {
    if ((lookup.status !== 'MISS' && lookup.status !== 'REFRESH') || lookup.key === undefined) return;
    let ttlMs: number;
    try {
      ttlMs = ttlMsFromMaxAge(request.maxAgeSeconds);
    } catch {
      return;
    }
    if (ttlMs <= 0) return;
    const answer: CachedAnswer = {
      body,
      createdAt: this.#now(),
      ...(headers === undefined ? {} : { headers }),
      ...(origin?.provider === undefined ? {} : { provider: origin.provider }),
      ...(origin?.model === undefined ? {} : { model: origin.model }),
    };
    try {
      await this.#store.set(lookup.key, answer, ttlMs);
    } catch (error) {
      this.#onError(error, 'set');
      return;
    }
    // A REFRESH did not embed during lookup; a MISS did, when semantic mode applies.
    const semantic = lookup.partition !== undefined && lookup.vector !== undefined ? { partition: lookup.partition, vector: lookup.vector } : await this.#semanticTarget(request);
    if (semantic === undefined) return;
    try {
      await (this.#index as SemanticIndex).add(semantic.partition, semantic.vector, lookup.key, ttlMs);
    } catch (error) {
      this.#onError(error, 'add');
    }
  }

  /** The partition and embedding for a semantic lookup, or undefined when semantic mode does not apply. */
  async #semanticTarget(request: CacheRequest): Promise<{ partition: string; vector: readonly number[] } | undefined> {
    if (request.mode !== 'semantic' || this.#index === undefined || this.#embedder === undefined) return undefined;
    const text = conversationText(request.endpoint, request.body);
    if (text === '') return undefined;
    try {
      const vector = await this.#embedder.embed(text);
      return { partition: semanticPartition({ ...request, embedder: this.#embedder.id }), vector };
    } catch (error) {
      this.#onError(error, 'embed');
      return undefined;
    }
  }
}
