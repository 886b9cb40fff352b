import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { readBodyBytes } from './read-body.ts';

// The one way the gateway calls anything upstream: inference, files, batches, fine-tuning,
// cache embeddings, guardrail webhooks, token endpoints. Every call here
//   - connects only where the egress policy allows (the agent checks at connect time; a
//     denial is a 400 AIGW_ERR_EGRESS_DENIED on every route),
//   - never follows or relays a redirect (a 3xx is a 502),
//   - has timeouts (headers and idle body),
//   - comes back with `redact`, which blanks the credentials this call sent (API keys,
//     bearer tokens, the target's secrets) out of anything relayed to the client.
// Bodies are read with the caps of read-body.ts; relayed headers pass `relayedHeaders`.

export interface GuardedRequest {
  readonly dispatcher: Dispatcher;
  readonly url: string | URL;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Buffer | Uint8Array | Readable | null | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Named in error messages ("openai", "the vertex-ai token endpoint"…). */
  readonly upstream: string;
  /** Time to the response headers (ms). */
  readonly headersTimeoutMs?: number | undefined;
  /** Longest pause between body chunks (ms). */
  readonly bodyTimeoutMs?: number | undefined;
  /** The caller's request_timeout: a timeout is then the client's 408, not the upstream's 504. */
  readonly requestTimeoutMs?: number | undefined;
  /** Secrets the call carries besides its headers (a target's keys, a signed assertion…). */
  readonly secrets?: ReadonlyArray<string | undefined> | undefined;
  /** The `param` an egress denial names (e.g. custom_host). */
  readonly egressParam?: string | undefined;
}

export interface GuardedResponse extends Dispatcher.ResponseData {
  /** The text with every credential this call sent replaced by `[redacted]`. */
  readonly redact: (text: string) => string;
}

/** Defaults when a caller names no timeout: control calls, not long model streams. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 120_000;
export const DEFAULT_BODY_TIMEOUT_MS = 120_000;
/** Error bodies are read up to this size; only a message is wanted from them. */
export const MAX_ERROR_BODY_BYTES = 1024 * 1024;
/** Credentials shorter than this are not redacted (they would blank ordinary words). */
const MIN_SECRET_LENGTH = 8;
export const REDACTED = '[redacted]';

export async function guardedCall(request: GuardedRequest): Promise<GuardedResponse> {
  const url = urlOf(request.url);
  const redact = redactorOf(request.headers, request.secrets);
  let response: Dispatcher.ResponseData;
  try {
    response = await request.dispatcher.request({
      origin: url.origin,
      path: url.path,
      method: request.method,
      headers: request.headers,
      body: request.body ?? null,
      signal: request.signal,
      headersTimeout: request.headersTimeoutMs ?? request.requestTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
      bodyTimeout: request.bodyTimeoutMs ?? request.requestTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    });
  } catch (error) {
    throw upstreamFailure(error, request.upstream, request.requestTimeoutMs, request.egressParam);
  }
  const status = response.statusCode;
  if (status >= 300 && status < 400) {
    // Never followed nor passed on: a provider cannot steer the gateway or the client elsewhere.
    discard(response.body);
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${request.upstream} answered with a redirect (${status}); redirects are not followed.`);
  }
  return Object.assign(response, { redact });
}

/** Reads a whole answer, capped (a declared length over it is refused unread); a larger one is a 502 and the connection is dropped. */
export function readGuardedBody(response: GuardedResponse, limit: number): Promise<Buffer> {
  const length = response.headers['content-length'];
  return readBodyBytes(response.body, limit, typeof length === 'string' && /^\d{1,15}$/.test(length) ? Number(length) : undefined);
}

/**
 * A `fetch` over guardedCall (for code written against fetch, e.g. guardrail webhooks): same
 * egress policy, timeouts and no redirects. The body stays a stream; the caller caps its read.
 */
export function guardedFetch(dispatcher: Dispatcher, upstream: string): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = input instanceof Request ? input.url : String(input);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = init.body === undefined || init.body === null ? null : typeof init.body === 'string' ? init.body : Buffer.from(await new Response(init.body).arrayBuffer());
    const method = (init.method ?? 'GET').toUpperCase() as GuardedRequest['method'];
    const answer = await guardedCall({ dispatcher, url, method, headers, body, signal: init.signal ?? undefined, upstream });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
    }
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    if (empty) discard(answer.body);
    const stream = empty ? null : (Readable.toWeb(answer.body) as ReadableStream<Uint8Array>);
    return new Response(stream, { status: answer.statusCode, headers: responseHeaders });
  }) as typeof fetch;
}

/** Drops a body we will not read (closing its connection) without an unhandled error. */
export function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** A failed upstream call as a gateway error: 400 egress denied, 408 request_timeout, 504/502 otherwise. */
export function upstreamFailure(error: unknown, upstream: string, requestTimeoutMs?: number, egressParam?: string): GatewayError {
  if (error instanceof GatewayError) return error;
  const denied = egressDenial(error);
  if (denied !== undefined) return new GatewayError('AIGW_ERR_EGRESS_DENIED', denied.message, { param: egressParam ?? null, cause: error });
  const code = (error as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    if (requestTimeoutMs !== undefined) {
      return new GatewayError('AIGW_ERR_REQUEST_TIMEOUT', `Request to ${upstream} timed out after ${requestTimeoutMs} ms (request_timeout).`, {
        cause: error,
      });
    }
    return new GatewayError('AIGW_ERR_UPSTREAM_TIMEOUT', `${upstream} did not answer in time.`, { cause: error });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new GatewayError('AIGW_ERR_UPSTREAM_TIMEOUT', `Connecting to ${upstream} timed out.`, { cause: error });
  }
  const reason = typeof code === 'string' ? code : error instanceof Error ? error.name : 'network error';
  return new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `Could not reach ${upstream}: ${reason}`, { cause: error });
}

/** The egress refusal inside an error (undici's request or fetch wrapping), if it is one. */
export function egressDenial(error: unknown): Error | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if ((current as { code?: string }).code === 'AIGW_ERR_EGRESS_DENIED') return current;
  }
  return undefined;
}

// Response headers relayed to clients: what SDKs and clients act on (content type, request
// ids for support tickets, rate-limit state, back-off hints, timings). Everything else —
// cookies, server banners, auth challenges, tracing of the provider's own infrastructure,
// organisation names — stays upstream.
const RELAYED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-encoding',
  'content-disposition',
  'retry-after',
  'retry-after-ms',
  'x-request-id',
  'request-id',
  'apim-request-id',
  'x-amzn-requestid',
  'openai-processing-ms',
  'openai-version',
  'openai-model',
]);
const RELAYED_HEADER_PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-'];

/** The upstream headers a client may see, credentials redacted from their values. */
export function relayedHeaders(headers: IncomingHttpHeaders, redact: (text: string) => string): Record<string, string | string[]> {
  const relayed: Record<string, string | string[]> = {};
  for (const raw in headers) {
    const value = headers[raw];
    if (value === undefined) continue;
    const name = relayedName(raw);
    if (name === undefined) continue;
    relayed[name] = Array.isArray(value) ? value.map(redact) : redact(value);
  }
  return relayed;
}

const relayedNames = new Map<string, string | null>();

/** The lower-case name when a header is relayed (decided once per distinct name, bounded). */
function relayedName(raw: string): string | undefined {
  let name = relayedNames.get(raw);
  if (name === undefined) {
    const lower = raw.toLowerCase();
    name = RELAYED_HEADERS.has(lower) || RELAYED_HEADER_PREFIXES.some((prefix) => lower.startsWith(prefix)) ? lower : null;
    if (relayedNames.size >= CACHE_LIMIT) relayedNames.clear();
    relayedNames.set(raw, name);
  }
  return name ?? undefined;
}

const CREDENTIAL_HEADER = /authorization|api-key|apikey|token|secret|signature|credential|cookie|password/i;
const CREDENTIAL_OPTION = /key|secret|token|password|credential|assertion|private|signature/i;

/**
 * Everything secret in a target: its API key and any option whose name says key, secret,
 * token… (cloud credentials, service-account JSON), nested up to a few levels.
 */
export function secretsOfTarget(target: { readonly apiKey?: string | undefined; readonly options?: Readonly<Record<string, unknown>> }): string[] {
  const found: string[] = [];
  if (target.apiKey !== undefined) found.push(target.apiKey);
  const walk = (value: unknown, secretName: boolean, depth: number): void => {
    if (typeof value === 'string') {
      if (secretName) found.push(value);
      return;
    }
    if (depth > 4 || typeof value !== 'object' || value === null) return;
    for (const [key, inner] of Object.entries(value)) walk(inner, secretName || CREDENTIAL_OPTION.test(key), depth + 1);
  };
  walk(target.options, false, 0);
  return found;
}

// Per-call work that depends only on strings a target repeats (its URL, its credentials) is
// done once per distinct value: `new URL` and the secret scan were ≈ 4% of a request's CPU.
// Both caches are bounded (cleared when full), so hostile or churning values cost only misses.
const CACHE_LIMIT = 512;
const urls = new Map<string, { readonly origin: string; readonly path: string }>();
const redactors = new Map<string, (text: string) => string>();
const credentialNames = new Map<string, boolean>();

/** A call's origin and path (a string URL parsed once per distinct value). */
export function urlOf(url: string | URL): { readonly origin: string; readonly path: string } {
  return typeof url === 'string' ? parsedUrl(url) : { origin: url.origin, path: url.pathname + url.search };
}

function parsedUrl(text: string): { readonly origin: string; readonly path: string } {
  let parsed = urls.get(text);
  if (parsed === undefined) {
    const url = new URL(text);
    parsed = { origin: url.origin, path: url.pathname + url.search };
    if (urls.size >= CACHE_LIMIT) urls.clear();
    urls.set(text, parsed);
  }
  return parsed;
}

function isCredentialHeader(name: string): boolean {
  let credential = credentialNames.get(name);
  if (credential === undefined) {
    credential = CREDENTIAL_HEADER.test(name);
    if (credentialNames.size >= CACHE_LIMIT) credentialNames.clear();
    credentialNames.set(name, credential);
  }
  return credential;
}

// Frozen headers (an adapter's plan made once per target) and the same secrets array: the
// redactor is known by identity, without building the string key below.
const redactorsByHeaders = new WeakMap<object, { readonly extra: ReadonlyArray<string | undefined> | undefined; readonly redact: (text: string) => string }>();

/** The call's redactor, made once per distinct set of credentials (the key is length-prefixed: no two sets share it). */
export function redactorOf(headers: Readonly<Record<string, string>>, extra: ReadonlyArray<string | undefined> | undefined): (text: string) => string {
  const frozen = Object.isFrozen(headers) && (extra === undefined || Object.isFrozen(extra));
  if (frozen) {
    const known = redactorsByHeaders.get(headers);
    if (known !== undefined && known.extra === extra) return known.redact;
  }
  const redact = redactorByKey(headers, extra);
  if (frozen) redactorsByHeaders.set(headers, { extra, redact });
  return redact;
}

function redactorByKey(headers: Readonly<Record<string, string>>, extra: ReadonlyArray<string | undefined> | undefined): (text: string) => string {
  let key = '';
  for (const name in headers) {
    if (!isCredentialHeader(name)) continue;
    const value = headers[name] ?? '';
    key += `h${value.length}:${value}`;
  }
  if (extra !== undefined) for (const value of extra) key += value === undefined ? 'u' : `x${value.length}:${value}`;
  let redact = redactors.get(key);
  if (redact === undefined) {
    redact = redactor(secretsOf(headers, extra));
    if (redactors.size >= CACHE_LIMIT) redactors.clear();
    redactors.set(key, redact);
  }
  return redact;
}

function secretsOf(headers: Readonly<Record<string, string>>, extra: ReadonlyArray<string | undefined> | undefined): string[] {
  const secrets = new Set<string>();
  const add = (value: string | undefined): void => {
    const trimmed = value?.trim();
    if (trimmed !== undefined && trimmed.length >= MIN_SECRET_LENGTH) secrets.add(trimmed);
  };
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADER.test(name)) continue;
    add(value);
    // The token alone too: "Bearer sk-…", "AWS4-HMAC-SHA256 Credential=…, Signature=…".
    const scheme = /^\s*[\w-]+\s+(.+)$/.exec(value);
    if (scheme?.[1] !== undefined) add(scheme[1]);
    for (const match of value.matchAll(/(?:Credential|Signature)=([^,\s]+)/g)) add(match[1]);
  }
  for (const value of extra ?? []) add(value);
  // Longest first, so a key that contains another is blanked whole.
  return [...secrets].sort((a, b) => b.length - a.length);
}

/** Replaces each secret wherever it appears, raw or JSON-escaped. */
export function redactor(secrets: readonly string[]): (text: string) => string {
  if (secrets.length === 0) return (text) => text;
  const forms = new Set<string>();
  for (const secret of secrets) {
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const form of ordered) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  };
}
