import { GatewayError } from '../../errors.ts';
import { signAssertion, type ServiceAccount } from './vertex-service-account.ts';
import { getGlobalDispatcher, type Dispatcher } from 'undici';
import { guardedCall, readGuardedBody, type GuardedResponse } from '../../upstream/guarded-call.ts';

// OAuth access tokens for service accounts, cached per account and shared by every request
// (DESIGN.md §3: never fetched per request). Concurrent first requests share one fetch; a
// token is refreshed shortly before it expires, while the old one still serves.

export interface FetchedToken {
  readonly accessToken: string;
  readonly expiresInSeconds: number;
}

/** Exchanges a signed assertion for an access token (the JWT-bearer grant). */
export type TokenFetcher = (account: ServiceAccount, assertion: string, dispatcher?: Dispatcher) => Promise<FetchedToken>;

export interface AccessTokenCacheOptions {
  fetchToken?: TokenFetcher;
  /** Clock in milliseconds (tests move it). */
  now?: () => number;
  /** Refresh this long before expiry (default 5 minutes, at most half the lifetime). */
  refreshMarginMs?: number;
  /** Distinct service accounts kept (oldest dropped first). */
  maxEntries?: number;
}

interface CacheEntry {
  token: string | undefined;
  expiresAt: number;
  refreshAt: number;
  pending: Promise<string> | undefined;
}

const TOKEN_REQUEST_TIMEOUT_MS = 10_000;
/** A token answer is a few KiB; more is not a token endpoint. */
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;
/** A token this close to expiry is not handed out any more: a request needs time to use it. */
const MIN_REMAINING_MS = 30_000;

export class AccessTokenCache {
  readonly #entries = new Map<string, CacheEntry>();
  readonly #fetchToken: TokenFetcher;
  readonly #now: () => number;
  readonly #refreshMarginMs: number;
  readonly #maxEntries: number;

  constructor(options: AccessTokenCacheOptions = {}) {
    this.#fetchToken = options.fetchToken ?? fetchTokenOverHttp;
    this.#now = options.now ?? Date.now;
    this.#refreshMarginMs = options.refreshMarginMs ?? 5 * 60_000;
    this.#maxEntries = options.maxEntries ?? 1000;
  }

  /** A valid access token for the account: cached, or fetched once for all concurrent callers. */
  async token(account: ServiceAccount, dispatcher?: Dispatcher): Promise<string> {
    const now = this.#now();
    let entry = this.#entries.get(account.cacheKey);
    if (entry === undefined) {
      entry = { token: undefined, expiresAt: 0, refreshAt: 0, pending: undefined };
      this.#remember(account.cacheKey, entry);
    }
    const usable = entry.token !== undefined && now < entry.expiresAt - MIN_REMAINING_MS;
    if (usable && now < entry.refreshAt) return entry.token as string;
    const pending = entry.pending ?? this.#refresh(account, entry, dispatcher);
    if (usable) {
      // Refresh in the background; this request still has a good token.
      pending.catch(() => undefined);
      return entry.token as string;
    }
    return pending;
  }

  /** Number of service accounts with a cache entry. */
  get size(): number {
    return this.#entries.size;
  }

  #refresh(account: ServiceAccount, entry: CacheEntry, dispatcher: Dispatcher | undefined): Promise<string> {
    const startedAt = this.#now();
    const pending = (async () => {
      const assertion = signAssertion(account, Math.floor(startedAt / 1000));
      const fetched = await this.#fetchToken(account, assertion, dispatcher);
      const lifetimeMs = fetched.expiresInSeconds * 1000;
      entry.token = fetched.accessToken;
      entry.expiresAt = startedAt + lifetimeMs;
      entry.refreshAt = entry.expiresAt - Math.min(this.#refreshMarginMs, lifetimeMs / 2);
      return fetched.accessToken;
    })();
    entry.pending = pending;
    // Whatever the outcome, the next caller after this one starts afresh (no negative caching).
    pending.then(
      () => {
        if (entry.pending === pending) entry.pending = undefined;
      },
      () => {
        if (entry.pending === pending) entry.pending = undefined;
      },
    );
    return pending;
  }

  #remember(key: string, entry: CacheEntry): void {
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, entry);
  }
}

/** POSTs the assertion to the account's token_uri (RFC 7523 §2.1). */
export async function fetchTokenOverHttp(account: ServiceAccount, assertion: string, dispatcher?: Dispatcher): Promise<FetchedToken> {
  const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
  let response: GuardedResponse;
  let text: string;
  try {
    // Through the gateway's agent when given: the token endpoint passes the egress policy too.
    response = await guardedCall({
      dispatcher: dispatcher ?? getGlobalDispatcher(),
      url: account.tokenUri,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      upstream: 'the vertex-ai token endpoint',
      secrets: [assertion],
      egressParam: 'cloudB_service_account_json',
      headersTimeoutMs: TOKEN_REQUEST_TIMEOUT_MS,
      bodyTimeoutMs: TOKEN_REQUEST_TIMEOUT_MS,
    });
    text = (await readGuardedBody(response, MAX_TOKEN_ANSWER_BYTES)).toString('utf8');
  } catch (error) {
    if (error instanceof GatewayError) {
      if (error.code === 'AIGW_ERR_EGRESS_DENIED') {
        throw new GatewayError('AIGW_ERR_EGRESS_DENIED', `vertex-ai token endpoint: ${error.message}`, { param: 'cloudB_service_account_json' });
      }
      if (error.code !== 'AIGW_ERR_UPSTREAM_UNREACHABLE') throw error;
    }
    throw new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', 'Could not reach the vertex-ai token endpoint.', { cause: error });
  }
  const body = parseObject(text);
  if (response.statusCode < 200 || response.statusCode >= 300) {
    // Only the OAuth error code is quoted: descriptions may echo parts of the request.
    const code = typeof body?.['error'] === 'string' && /^[a-z_]{1,64}$/.test(body['error']) ? ` ${body['error']}` : '';
    throw new GatewayError(
      'AIGW_ERR_UPSTREAM_INVALID_RESPONSE',
      `The vertex-ai token endpoint refused the service account (HTTP ${response.statusCode}${code}).`,
    );
  }
  const accessToken = body?.['access_token'];
  const expiresIn = body?.['expires_in'];
  if (typeof accessToken !== 'string' || accessToken === '') {
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', 'The vertex-ai token endpoint answered without an access token.');
  }
  const seconds = typeof expiresIn === 'number' ? expiresIn : typeof expiresIn === 'string' ? Number(expiresIn) : 3600;
  return { accessToken, expiresInSeconds: Number.isFinite(seconds) && seconds > 0 ? seconds : 3600 };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The process-wide cache the vertex-ai adapter uses. */
export const SHARED_TOKEN_CACHE = new AccessTokenCache();
