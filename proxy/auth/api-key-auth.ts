import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayApiKey, GatewayScope, GatewayState } from '../config/gateway-state.ts';
import { GatewayError } from '../errors.ts';

// Gateway API keys are kept only as sha256 digests. A presented key is hashed and looked
// up by digest; the final comparison is constant-time. The lookup's timing depends on the
// digest only, which says nothing useful about any stored key.

export const API_KEY_HEADER = 'x-gateway-api-key';

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
): GatewayApiKey {
  if (typeof presented !== 'string' || presented === '') {
    throw new GatewayError('AIGW_ERR_MISSING_API_KEY', `Missing gateway API key: send it in the ${API_KEY_HEADER} header.`, {
      param: API_KEY_HEADER,
    });
  }
  const cache = verifiedKeys(state);
  let found = cache.get(presented);
  if (found === undefined) {
    const digest = createHash('sha256').update(presented).digest();
    found = state.apiKeysByDigest.get(digest.toString('hex'));
    if (found === undefined || !timingSafeEqual(found.digest, digest)) {
      throw new GatewayError('AIGW_ERR_INVALID_API_KEY', 'Invalid gateway API key.', { param: API_KEY_HEADER });
    }
    if (cache.size < VERIFIED_LIMIT) cache.set(presented, found);
  }
  if (requiredScope !== undefined && !found.scopes.has(requiredScope)) {
    throw new GatewayError('AIGW_ERR_FORBIDDEN', `This gateway API key lacks the "${requiredScope}" scope.`, {
      param: API_KEY_HEADER,
    });
  }
  return found;
}
