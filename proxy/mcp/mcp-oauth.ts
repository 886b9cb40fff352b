import { createRemoteJWKSet, customFetch, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { McpPrincipal } from './mcp-catalog.ts';
import type { McpOAuthSettings } from './mcp-schema.ts';

// OAuth 2.1 for /mcp: the gateway is a resource server. It publishes its protected-resource
// metadata (RFC 9728) and verifies bearer JWTs against the configured issuer's JWKS:
// signature, issuer, audience, expiry (jose). The token's scopes (and a workspace claim)
// are matched by the MCP servers' grants; the token itself goes upstream only to servers
// that opt in (forwardClientToken).

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const jwksByUri = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
const MAX_JWKS_CACHED = 16;

/** True when the bearer value has the shape of a JWS compact token. */
export function looksLikeJwt(token: string | undefined): token is string {
  return token !== undefined && token.length < 16_384 && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

export function jwksUriOf(settings: McpOAuthSettings): string {
  return settings.jwksUri ?? `${settings.issuer.replace(/\/$/, '')}/.well-known/jwks.json`;
}

/** Verifies a bearer JWT and returns its caller, or throws a 401 (AIGW_ERR_INVALID_API_KEY). */
export async function verifyBearer(token: string, settings: McpOAuthSettings, dispatcher: Dispatcher): Promise<McpPrincipal> {
  const uri = jwksUriOf(settings);
  let jwks = jwksByUri.get(uri);
  if (jwks === undefined) {
    if (jwksByUri.size >= MAX_JWKS_CACHED) jwksByUri.clear();
    jwks = createRemoteJWKSet(new URL(uri), {
      timeoutDuration: 5_000,
      cooldownDuration: 30_000,
      [customFetch]: ((url: string, options: RequestInit) => undiciFetch(url, { ...(options as object), redirect: 'manual', dispatcher } as never)) as never,
    });
    jwksByUri.set(uri, jwks);
  }
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, jwks, { issuer: settings.issuer, audience: settings.audience, algorithms: ALGORITHMS, clockTolerance: 30 }));
  } catch (error) {
    const reason = error instanceof joseErrors.JWTExpired ? 'the token has expired' : error instanceof joseErrors.JWTClaimValidationFailed ? `its "${error.claim}" claim is not accepted` : 'it does not verify';
    throw new GatewayError('AIGW_ERR_INVALID_API_KEY', `Invalid bearer token: ${reason}.`, { param: 'authorization' });
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') {
    throw new GatewayError('AIGW_ERR_INVALID_API_KEY', 'Invalid bearer token: it names no subject (sub).', { param: 'authorization' });
  }
  const workspaceClaim = settings.workspaceClaim === undefined ? undefined : payload[settings.workspaceClaim];
  return {
    id: `jwt:${settings.issuer}#${payload.sub}`,
    kind: 'oauth',
    keyId: undefined,
    workspace: typeof workspaceClaim === 'string' ? workspaceClaim : undefined,
    scopes: scopesOf(payload),
  };
}

function scopesOf(payload: JWTPayload): ReadonlySet<string> {
  const scope = payload['scope'] ?? payload['scp'];
  if (typeof scope === 'string') return new Set(scope.split(' ').filter((item) => item !== ''));
  if (Array.isArray(scope)) return new Set(scope.filter((item): item is string => typeof item === 'string'));
  return new Set();
}

/** RFC 9728 metadata for the resource served at `resourcePath`. */
export function protectedResourceMetadata(settings: McpOAuthSettings): Record<string, unknown> {
  return {
    resource: settings.resource ?? settings.audience,
    authorization_servers: [settings.issuer],
    bearer_methods_supported: ['header'],
    ...(settings.scopesSupported === undefined ? {} : { scopes_supported: settings.scopesSupported }),
    resource_name: 'aigateway MCP',
  };
}
