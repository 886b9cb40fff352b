import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayApiKey, GatewayScope, GatewayState } from '../config/gateway-state.ts';
import { GatewayError } from '../errors.ts';

// Gateway API keys are kept only as sha256 digests. A presented key is hashed and looked
// up by digest; the final comparison is constant-time. The lookup's timing depends on the
// digest only, which says nothing useful about any stored key.

export const API_KEY_HEADER = 'x-gateway-api-key';

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
  const digest = createHash('sha256').update(presented).digest();
  const found = state.apiKeysByDigest.get(digest.toString('hex'));
  if (found === undefined || !timingSafeEqual(found.digest, digest)) {
    throw new GatewayError('AIGW_ERR_INVALID_API_KEY', 'Invalid gateway API key.', { param: API_KEY_HEADER });
  }
  if (requiredScope !== undefined && !found.scopes.has(requiredScope)) {
    throw new GatewayError('AIGW_ERR_FORBIDDEN', `This gateway API key lacks the "${requiredScope}" scope.`, {
      param: API_KEY_HEADER,
    });
  }
  return found;
}
