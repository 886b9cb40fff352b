import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { GatewayApiKey, GatewayScope, GatewayState } from '../config/gateway-state.ts';
import { GatewayError } from '../errors.ts';

// Gateway API keys are kept only as sha256 digests. A presented key is hashed and looked
// up by digest; the final comparison is constant-time. The lookup's timing depends on the
// digest only, which says nothing useful about any stored key.

export const API_KEY_HEADER = 'x-gateway-api-key';

/** Where the presented gateway key was read (the header a 401 names). */
export type KeyHeader = typeof API_KEY_HEADER | 'authorization' | 'x-api-key';

/** The gateway key a request presents, and where it was found. */
export interface PresentedKey {
  readonly value: string | undefined;
  readonly header: KeyHeader;
}

const MISSING_KEY_MESSAGE = `Missing gateway API key: send it as Authorization: Bearer <gateway key> (or in the ${API_KEY_HEADER} header).`;

/**
 * Which header carries the gateway key (docs/decisions.md, "The gateway key as the bearer
 * token"). With x-gateway-api-key, that is the key and Authorization / x-api-key are the
 * client's provider credential, as the spec has it. Without it, the bearer token (or
 * x-api-key) is the gateway key; two different values there are refused, since either
 * could be meant. Decided on which headers are present, never on what a lookup found, so
 * a wrong key costs one hash and gets the same 401 wherever it was sent.
 */
export function presentedKey(headers: IncomingHttpHeaders): PresentedKey {
  const explicit = headers[API_KEY_HEADER];
  if (explicit !== undefined) return { value: typeof explicit === 'string' ? explicit : undefined, header: API_KEY_HEADER };
  const bearer = bearerToken(headers['authorization']);
  const apiKey = headerString(headers['x-api-key']);
  if (bearer !== undefined && apiKey !== undefined && bearer !== apiKey) {
    throw new GatewayError(
      'AIGW_ERR_AMBIGUOUS_CREDENTIAL',
      `Authorization and x-api-key carry different keys: send the gateway key in one of them, or send it in ${API_KEY_HEADER} and your provider key in Authorization.`,
      { param: 'authorization' },
    );
  }
  if (bearer !== undefined) return { value: bearer, header: 'authorization' };
  return { value: apiKey, header: 'x-api-key' };
}

/**
 * Removes the client's copies of the gateway key from the request headers, so no later
 * stage (routing, forwarding, logging) can take it for a provider credential. A bearer key
 * moves to x-gateway-api-key, which is never forwarded to a provider (call-target.ts) and
 * is what the control plane checks again.
 */
export function dropGatewayKeyHeaders(headers: IncomingHttpHeaders, presented: PresentedKey): void {
  if (presented.header === API_KEY_HEADER) {
    // The spec's scheme: Authorization is the provider key, unless it repeats the gateway key.
    if (presented.value === undefined) return;
    // endsWith first: most requests carry a provider key here, and skip the pattern.
    const authorization = headers['authorization'];
    if (typeof authorization === 'string' && authorization.endsWith(presented.value) && bearerToken(authorization) === presented.value) delete headers['authorization'];
    if (headerString(headers['x-api-key']) === presented.value) delete headers['x-api-key'];
    return;
  }
  delete headers['authorization'];
  delete headers['x-api-key'];
  if (presented.value !== undefined) headers[API_KEY_HEADER] = presented.value;
}

/** The token of `Authorization: Bearer <token>`. */
export function bearerToken(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value.trim());
  return match?.[1];
}

function headerString(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

// Verified keys, per snapshot: a client sends the same key on every request, so the digest
// is computed once per key and snapshot. Bounded; only keys that verified are kept, so a
// flood of wrong keys cannot grow it.
const VERIFIED_LIMIT = 1024;
const verified = new WeakMap<GatewayState, Map<string, GatewayApiKey>>();

function verifiedKeys(state: GatewayState): Map<string, GatewayApiKey> {
  let keys = verified.get(state);
  if (keys === undefined) {
    keys = new Map();
    verified.set(state, keys);
  }
  return keys;
}

/** Returns the key record for the presented header value, or throws a 401 (403 without the scope). */
export function authenticateApiKey(
  state: GatewayState,
  presented: string | string[] | undefined,
  requiredScope: GatewayScope | undefined,
  header: KeyHeader = API_KEY_HEADER,
): GatewayApiKey {
  if (typeof presented !== 'string' || presented === '') {
    throw new GatewayError('AIGW_ERR_MISSING_API_KEY', MISSING_KEY_MESSAGE, { param: header });
  }
  const cache = verifiedKeys(state);
  let found = cache.get(presented);
  if (found === undefined) {
    const digest = createHash('sha256').update(presented).digest();
    found = state.apiKeysByDigest.get(digest.toString('hex'));
    if (found === undefined || !timingSafeEqual(found.digest, digest)) {
      throw new GatewayError('AIGW_ERR_INVALID_API_KEY', 'Invalid gateway API key.', { param: header });
    }
    if (cache.size < VERIFIED_LIMIT) cache.set(presented, found);
  }
  if (requiredScope !== undefined && !found.scopes.has(requiredScope)) {
    throw new GatewayError('AIGW_ERR_FORBIDDEN', `This gateway API key lacks the "${requiredScope}" scope.`, { param: header });
  }
  return found;
}
