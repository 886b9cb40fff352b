import type { FastifyRequest } from 'fastify';
import type { GatewayApiKey, GatewayScope, GatewayState } from '../config/gateway-state.ts';
import { API_KEY_HEADER, authenticateApiKey, bearerToken, dropGatewayKeyHeaders, presentedKey } from './api-key-auth.ts';

// Who may call a route is decided from the route Fastify actually matched (its options),
// never from the raw URL: `/%76%31/logs`, `http://x/v1/logs`, `//v1/logs` and `/v1/logs/`
// all reach the same handler, so they must all meet the same check. Every route needs a
// key unless its options say `public: true`; unmatched URLs (the 404 handler) need one too.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs on this route (undefined: any valid key). */
    gatewayScope?: GatewayScope | undefined;
    /** Served without a key (health, readiness, metrics). Keep this list short. */
    public?: boolean;
    /** Also takes OAuth bearer tokens (JWTs), which the route verifies itself (/mcp, proxy/mcp/). */
    oauthBearer?: boolean;
  }
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Route options for a route anyone may call. */
export const PUBLIC_ROUTE = { config: { public: true } } as const;

/** True when the matched route is explicitly public. */
export function isPublicRoute(request: FastifyRequest): boolean {
  return request.routeOptions.config?.public === true;
}

/**
 * Authenticates the request against the route it matched: 401 without a valid key, 403
 * without the route's scope. Throws for public routes' callers never (they are skipped).
 * The key may come as x-gateway-api-key or as the bearer token (api-key-auth.ts); the
 * client's copies of it are then removed from the headers, so it never goes upstream.
 */
export function authenticateMatchedRoute(request: FastifyRequest, state: GatewayState): GatewayApiKey | undefined {
  const headers = request.raw.headers;
  // A JWT where the route takes them: left to the route, which answers 401 unless it verifies.
  if (request.routeOptions.config?.oauthBearer === true && headers[API_KEY_HEADER] === undefined && JWT_SHAPE.test(bearerToken(headers['authorization']) ?? '')) return undefined;
  const presented = presentedKey(headers);
  const key = authenticateApiKey(state, presented.value, request.routeOptions.config?.gatewayScope, presented.header);
  dropGatewayKeyHeaders(headers, presented);
  return key;
}
