import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../../errors.ts';
import { headerValue } from '../../gateway-headers.ts';
import type { ResolveOptionsInput } from '../provider-adapter.ts';
import { parseServiceAccount, type ServiceAccount } from './vertex-service-account.ts';

// cloudB (Google Vertex AI) settings for one target, gathered from — in this order — the
// config leaf (cloudB_* keys), the request's x-gateway-cloudB-* headers, and the saved
// provider's `options` (projectId, region, serviceAccountJson). Credentials are a service
// account (→ OAuth token, see vertex-token-cache.ts) or a ready access token (the config's
// `Authorization` / `api_key`, a saved provider's apiKey, or the request's bearer token).

export const VERTEX_HEADER = {
  projectId: 'x-gateway-cloudb-project-id',
  region: 'x-gateway-cloudb-region',
} as const;

export interface VertexOptions {
  readonly projectId: string;
  readonly region: string;
  /** Set when the credential is a service account; the token comes from the cache. */
  readonly serviceAccount: ServiceAccount | undefined;
  /** Set when the credential is an access token supplied by the caller. */
  readonly accessToken: string | undefined;
}

// Region and project end up in the URL (the region even in the host name), so they are
// checked strictly: a crafted region must never steer the bearer token to another host.
const REGION = /^[a-z][a-z0-9-]{1,62}$/;
const PROJECT = /^[a-z0-9][a-z0-9.:-]{0,127}$/i;

/** Resolves the Vertex AI settings of one target; throws a 400 GatewayError naming what is missing. */
export function resolveVertexOptions(input: ResolveOptionsInput): { options: Record<string, unknown>; baseUrl: string } {
  const { node, saved, headers } = input;
  const savedOptions = saved?.options ?? {};
  const serviceAccountSource = node.cloudB_service_account_json ?? savedOptions['serviceAccountJson'];
  const serviceAccount = serviceAccountSource === undefined ? undefined : parseServiceAccount(serviceAccountSource);
  const accessToken = serviceAccount === undefined ? accessTokenOf(node.Authorization, node.api_key ?? saved?.apiKey) : undefined;
  if (serviceAccount === undefined && accessToken === undefined) {
    throw new GatewayError(
      'AIGW_ERR_MISSING_PROVIDER_KEY',
      'No credentials for provider "vertex-ai": set vertex_service_account_json (cloudB_service_account_json) in the config, use a saved provider, or send Authorization: Bearer <access token>.',
      { param: 'cloudB_service_account_json' },
    );
  }
  const region = firstString(node.cloudB_region, header(headers, VERTEX_HEADER.region), savedOptions['region']);
  if (region === undefined || !REGION.test(region)) {
    throw new GatewayError(
      'AIGW_ERR_INVALID_CONFIG',
      region === undefined
        ? 'Provider "vertex-ai" needs a region: set vertex_region (cloudB_region) in the config or the x-gateway-vertex-region header.'
        : 'vertex_region (cloudB_region) must be a Google Cloud region name such as us-central1.',
      { param: VERTEX_HEADER.region },
    );
  }
  const projectId = firstString(
    node.cloudB_project_id,
    header(headers, VERTEX_HEADER.projectId),
    savedOptions['projectId'],
    serviceAccount?.projectId,
  );
  if (projectId === undefined || !PROJECT.test(projectId)) {
    throw new GatewayError(
      'AIGW_ERR_INVALID_CONFIG',
      projectId === undefined
        ? 'Provider "vertex-ai" needs a project: set vertex_project_id (cloudB_project_id) in the config or the x-gateway-vertex-project-id header.'
        : 'vertex_project_id (cloudB_project_id) must be a Google Cloud project id.',
      { param: VERTEX_HEADER.projectId },
    );
  }
  const options: VertexOptions = { projectId, region, serviceAccount, accessToken };
  return { options: { vertex: options }, baseUrl: vertexOrigin(region) };
}

/** The public Vertex AI origin for a region (`global` has no regional prefix). */
export function vertexOrigin(region: string): string {
  return region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`;
}

/** Reads the options resolveVertexOptions stored on a target. */
export function vertexOptionsOf(options: Readonly<Record<string, unknown>>): VertexOptions {
  const value = options['vertex'];
  if (typeof value !== 'object' || value === null) {
    throw new GatewayError('AIGW_ERR_INTERNAL', 'vertex-ai target was resolved without its options.');
  }
  return value as VertexOptions;
}

function accessTokenOf(authorization: string | undefined, apiKey: string | undefined): string | undefined {
  const fromAuthorization = authorization === undefined ? undefined : /^Bearer\s+(\S+)$/i.exec(authorization.trim())?.[1];
  const token = fromAuthorization ?? apiKey;
  return token === undefined || token === '' ? undefined : token;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headerValue(headers[name]);
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function firstString(...values: unknown[]): string | undefined {
  for (const value of values) if (typeof value === 'string' && value !== '') return value;
  return undefined;
}
