import type { IncomingHttpHeaders } from 'node:http';
import type { GatewayState, SavedProvider } from '../config/gateway-state.ts';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { catalogEntry, catalogNames, GENERIC_COMPATIBLE_ADAPTER } from '../providers/provider-catalog.ts';
import type { HostChooser } from '../upstream/upstream-agent.ts';
import type { ConfigOrigin } from '../config/routing-plan.ts';

// A leaf of the config tree → the concrete upstream it calls. Pure: looks only at the
// node, the snapshot and the request headers (for x-gateway-cloud* settings). Saved
// providers (`@slug`, virtual keys) supply their own credentials and host; a node's
// custom_host overrides the host — but only in configs the operator wrote. A saved
// credential goes only to the host configured with it (DESIGN.md §8): in a config the
// request wrote, a saved provider's target must resolve to that provider's own origin.
// Each target also says who chose its host (`hostChosenBy`): a host the request picked
// passes the client egress policy (`egress.clientAllow`), never the operator's.

const NO_HEADERS: IncomingHttpHeaders = {};

// Saved configs' nodes live as long as their snapshot: their targets are resolved once.
// (Families whose settings come from request headers are resolved every time.)
const resolved = new WeakMap<GatewayState, WeakMap<RoutingConfig, ResolvedTarget>>();

export function resolveTarget(
  node: RoutingConfig,
  path: string,
  state: GatewayState,
  requestHeaders: IncomingHttpHeaders = NO_HEADERS,
  origin: ConfigOrigin = 'request',
): ResolvedTarget {
  const known = resolved.get(state)?.get(node);
  if (known !== undefined && known.path === path) return known;
  const uncached = resolveUncached(node, path, state, requestHeaders, origin);
  const hostChosenBy = origin === 'request' ? checkCredentialHost(uncached, node, state) : checkOperatorHost(uncached, node, path, state, requestHeaders);
  const target: ResolvedTarget = hostChosenBy === uncached.hostChosenBy ? uncached : { ...uncached, hostChosenBy };
  if (catalogEntry(target.provider)?.resolveOptions === undefined) {
    let perState = resolved.get(state);
    if (perState === undefined) {
      perState = new WeakMap();
      resolved.set(state, perState);
    }
    perState.set(node, target);
  }
  return target;
}

function resolveUncached(
  given: RoutingConfig,
  path: string,
  state: GatewayState,
  givenHeaders: IncomingHttpHeaders,
  origin: ConfigOrigin,
): ResolvedTarget {
  const saved = savedProviderFor(given, state);
  const clientCredential = clientCredentialAllowed(saved, origin);
  const node = clientCredential || origin === 'operator' ? given : withoutClientCredential(given);
  const requestHeaders = clientCredential ? givenHeaders : withoutCredentialHeaders(givenHeaders);
  const providerName = saved?.provider ?? node.provider;
  if (providerName === undefined) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `${path}: a target needs provider or virtual_key.`, {
      param: HEADER.config,
    });
  }
  const customHost = node.custom_host ?? saved?.customHost;
  const entry = catalogEntry(providerName);
  if (entry === undefined && customHost === undefined) {
    throw new GatewayError(
      'AIGW_ERR_UNSUPPORTED_PROVIDER',
      `Provider "${providerName}" is not supported. Supported: ${catalogNames().join(', ')}; any OpenAI-compatible host works with ${HEADER.customHost}.`,
      { param: HEADER.provider },
    );
  }
  const family = entry?.resolveOptions?.({ node, saved, headers: requestHeaders });
  const base = customHost ?? family?.baseUrl ?? entry?.baseUrl;
  if (base === undefined) {
    throw new GatewayError('AIGW_ERR_MISSING_PROVIDER', `Provider "${providerName}" is self-hosted: set ${HEADER.customHost} (or custom_host).`, {
      param: HEADER.customHost,
    });
  }
  const apiKey = saved?.apiKey ?? node.api_key;
  const requiresApiKey = entry?.requiresApiKey ?? true;
  if (requiresApiKey && (apiKey === undefined || apiKey === '') && customHost === undefined) {
    throw new GatewayError(
      'AIGW_ERR_MISSING_PROVIDER_KEY',
      `No credentials for provider "${providerName}": send Authorization: Bearer <provider key>, or use a saved provider.`,
      { param: 'authorization' },
    );
  }
  const headers: Record<string, string> = {};
  const organization = node.vendorA_organization ?? saved?.organization;
  const project = node.vendorA_project ?? saved?.project;
  if (organization !== undefined) headers['openai-organization'] = organization;
  if (project !== undefined) headers['openai-project'] = project;
  return {
    path,
    provider: providerName,
    adapter: entry?.adapter ?? GENERIC_COMPATIBLE_ADAPTER,
    baseUrl: normaliseBaseUrl(base, customHost !== undefined),
    customHost: customHost !== undefined,
    apiKey,
    headers,
    options: family?.options ?? {},
    node,
    hostChosenBy: 'request',
  };
}

/**
 * A client's credential (Authorization, x-api-key, a request-written api_key) goes only to
 * a provider the request itself names with it: never to a saved provider, unless its
 * definition opts in (`forwardClientCredential`), nor to a target an operator's config
 * chose. Saved providers bring their own key, or none (a keyless local model).
 */
function clientCredentialAllowed(saved: SavedProvider | undefined, origin: ConfigOrigin): boolean {
  if (saved !== undefined) return saved.forwardClientCredential === true;
  return origin === 'request';
}

function withoutClientCredential(node: RoutingConfig): RoutingConfig {
  if (node.api_key === undefined && node.Authorization === undefined) return node;
  const { api_key: _apiKey, Authorization: _authorization, ...rest } = node;
  return rest;
}

function withoutCredentialHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  if (headers['authorization'] === undefined && headers['x-api-key'] === undefined) return headers;
  const { authorization: _authorization, 'x-api-key': _apiKey, ...rest } = headers;
  return rest;
}

/**
 * Refuses a request-written target that would send a saved credential anywhere but the
 * saved provider's own origin (its operator-set custom host, or the provider's public API).
 * Provider-owned regional hosts (Vertex AI, Bedrock) count as the provider's own.
 * Returns who chose the host: the operator only when it is the saved provider's own origin.
 */
function checkCredentialHost(target: ResolvedTarget, node: RoutingConfig, state: GatewayState): HostChooser {
  const saved = savedProviderFor(node, state);
  if (saved === undefined) return 'request';
  const which = node.virtual_key !== undefined ? `virtual key "${node.virtual_key}"` : `saved provider "@${saved.slug}"`;
  if (node.custom_host !== undefined) {
    throw new GatewayError(
      'AIGW_ERR_CREDENTIAL_HOST_CONFLICT',
      `A custom host from the request cannot be used with ${which}: its credentials go only to the host configured with it. Send your own provider key with a custom host instead.`,
      { param: HEADER.customHost },
    );
  }
  const home = homeOrigin(saved, state);
  const chosen = new URL(target.baseUrl);
  if (home !== undefined && chosen.origin === home) return 'operator';
  if (home !== undefined && providerOwnsBoth(saved.provider, home, chosen.hostname)) return 'request';
  throw new GatewayError(
    'AIGW_ERR_CREDENTIAL_HOST_CONFLICT',
    `The request chose a host (${chosen.host}) for ${which}; its credentials go only to the host configured with it.`,
    { param: HEADER.config },
  );
}

/**
 * In a config the operator wrote, only request headers (a resource name, a region) can move
 * the host: it is the operator's when the node resolves to the same origin without them.
 * A saved credential still goes only to its own origin (or the provider's regional hosts).
 */
function checkOperatorHost(target: ResolvedTarget, node: RoutingConfig, path: string, state: GatewayState, requestHeaders: IncomingHttpHeaders): HostChooser {
  if (requestHeaders === NO_HEADERS || catalogEntry(target.provider)?.resolveOptions === undefined) return 'operator';
  let own: string | undefined;
  try {
    own = new URL(resolveUncached(node, path, state, NO_HEADERS, 'operator').baseUrl).origin;
  } catch {
    own = undefined; // the host (or the key) needs the request: not the operator's choice alone
  }
  const chosen = new URL(target.baseUrl);
  if (chosen.origin === own) return 'operator';
  const saved = savedProviderFor(node, state);
  // Regional hosts (Vertex AI, Bedrock) all belong to the provider: a region header may pick one.
  if (saved !== undefined && PROVIDER_HOSTS[saved.provider]?.test(chosen.hostname) !== true) {
    throw new GatewayError(
      'AIGW_ERR_CREDENTIAL_HOST_CONFLICT',
      `The request chose a host (${chosen.host}) for saved provider "@${saved.slug}"; its credentials go only to the host configured with it.`,
      { param: HEADER.config },
    );
  }
  return 'request';
}

// The origin a saved provider resolves to from operator-written settings alone, per snapshot.
const homes = new WeakMap<GatewayState, Map<string, string | undefined>>();

function homeOrigin(saved: SavedProvider, state: GatewayState): string | undefined {
  let perState = homes.get(state);
  if (perState === undefined) {
    perState = new Map();
    homes.set(state, perState);
  }
  if (perState.has(saved.slug)) return perState.get(saved.slug);
  let origin: string | undefined;
  try {
    origin = new URL(resolveUncached({ provider: `@${saved.slug}` }, 'provider', state, NO_HEADERS, 'operator').baseUrl).origin;
  } catch {
    origin = undefined; // the operator set no host of its own: the request may not pick one
  }
  perState.set(saved.slug, origin);
  return origin;
}

// Regional endpoints whose every host belongs to the provider (region names are validated
// before they reach the host name).
const PROVIDER_HOSTS: Readonly<Record<string, RegExp>> = {
  'vertex-ai': /^(?:[a-z][a-z0-9-]{1,62}-)?aiplatform\.googleapis\.com$/,
  bedrock: /^bedrock-runtime\.[a-z][a-z0-9-]{1,62}\.amazonaws\.com$/,
};

function providerOwnsBoth(provider: string, home: string, chosenHost: string): boolean {
  const pattern = PROVIDER_HOSTS[provider];
  return pattern !== undefined && pattern.test(new URL(home).hostname) && pattern.test(chosenHost);
}

function savedProviderFor(node: RoutingConfig, state: GatewayState): SavedProvider | undefined {
  if (node.virtual_key !== undefined) {
    const found = state.providersByVirtualKey.get(node.virtual_key) ?? state.providersBySlug.get(node.virtual_key);
    if (found === undefined) {
      throw new GatewayError('AIGW_ERR_UNKNOWN_PROVIDER', `No saved provider with virtual key "${node.virtual_key}".`, {
        param: HEADER.virtualKey,
      });
    }
    return found;
  }
  if (node.provider?.startsWith('@')) {
    const slug = node.provider.slice(1);
    const found = state.providersBySlug.get(slug);
    if (found === undefined) {
      throw new GatewayError('AIGW_ERR_UNKNOWN_PROVIDER', `No saved provider "@${slug}".`, { param: HEADER.provider });
    }
    return found;
  }
  return undefined;
}

function normaliseBaseUrl(base: string, fromUser: boolean): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', `Custom host "${base}" is not an absolute URL.`, { param: HEADER.customHost });
  }
  if (fromUser && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', 'Custom host must be an http or https URL.', { param: HEADER.customHost });
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', 'Custom host must not carry credentials, a query or a fragment.', {
      param: HEADER.customHost,
    });
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
