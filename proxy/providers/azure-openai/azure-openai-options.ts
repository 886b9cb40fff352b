import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import type { SavedProvider } from '../../config/gateway-state.ts';
import type { RoutingConfig } from '../../config/routing-config-schema.ts';
import { GatewayError } from '../../errors.ts';
import { headerValue } from '../../gateway-headers.ts';
import { formatIssue, fromZodIssue } from '../../openai/zod-issues.ts';
import type { ResolveOptionsInput } from '../provider-adapter.ts';

// Where an `azure-openai` (cloudA) target's settings come from, most specific first:
//   1. the config leaf: resource_name | cloudA_resource_name, deployment_id |
//      cloudA_deployment_id, api_version | cloudA_api_version, cloudA_model_name,
//      deployments, cloudA_deployment_type, cloudA_endpoint_name, cloudA_region,
//      cloudA_deployment_name, api_key, Authorization;
//   2. the request headers x-gateway-cloudA-resource-name / -deployment-id /
//      -api-version / -model-name (and Authorization);
//   3. the saved provider's `options` (camelCase, see SavedAzureOptionsSchema).
// Deployment selection by alias needs the request body, so it happens in planRequest.

export const CLOUDA_HEADER = {
  resourceName: 'x-gateway-clouda-resource-name',
  deploymentId: 'x-gateway-clouda-deployment-id',
  apiVersion: 'x-gateway-clouda-api-version',
  modelName: 'x-gateway-clouda-model-name',
} as const;

/** api-key: the `api-key` header; entra: `Authorization: Bearer`; auto: bearer when the token is a JWT. */
export type AzureAuthMode = 'api-key' | 'entra' | 'auto';

export interface AzureDeployment {
  readonly deploymentId: string;
  readonly alias: string;
  readonly apiVersion: string;
  readonly isDefault: boolean;
}

/** Everything planRequest needs; stored as `options.azure` on the resolved target. */
export interface AzureSettings {
  /** openai: an Azure OpenAI resource; serverless / managed: an Azure AI inference endpoint. */
  readonly kind: 'openai' | 'serverless' | 'managed';
  readonly deploymentId: string | undefined;
  readonly apiVersion: string | undefined;
  readonly deployments: readonly AzureDeployment[];
  readonly modelName: string | undefined;
  /** Managed online endpoints: sent as azureml-model-deployment. */
  readonly deploymentName: string | undefined;
  readonly authMode: AzureAuthMode;
  readonly credential: string | undefined;
}

const DeploymentOptionSchema = z.strictObject({
  deploymentId: z.string().min(1),
  alias: z.string().min(1),
  apiVersion: z.string().min(1),
  isDefault: z.boolean().optional(),
});

/** The saved provider's `options` for azure-openai. */
export const SavedAzureOptionsSchema = z.strictObject({
  resourceName: z.string().min(1).optional(),
  deploymentId: z.string().min(1).optional(),
  apiVersion: z.string().min(1).optional(),
  modelName: z.string().min(1).optional(),
  deployments: z.array(DeploymentOptionSchema).optional(),
  authMode: z.enum(['api-key', 'entra', 'auto']).optional(),
  deploymentType: z.enum(['serverless', 'managed']).optional(),
  endpointName: z.string().min(1).optional(),
  region: z.string().min(1).optional(),
  deploymentName: z.string().min(1).optional(),
});

type SavedAzureOptions = z.infer<typeof SavedAzureOptionsSchema>;

/** ProviderFamily.resolveOptions for azure-openai. */
export function resolveAzureOptions({ node, saved, headers }: ResolveOptionsInput): {
  options: Record<string, unknown>;
  baseUrl?: string;
} {
  const stored = savedOptions(saved);
  const header = (name: string): string | undefined => nonEmpty(headerValue(headers[name]));
  const kind = node.cloudA_deployment_type ?? stored.deploymentType ?? 'openai';
  const customHost = node.custom_host ?? saved?.customHost;
  const settings: AzureSettings = {
    kind,
    deploymentId: node.deployment_id ?? node.cloudA_deployment_id ?? header(CLOUDA_HEADER.deploymentId) ?? stored.deploymentId,
    apiVersion: node.api_version ?? node.cloudA_api_version ?? header(CLOUDA_HEADER.apiVersion) ?? stored.apiVersion,
    deployments: deploymentsOf(node, stored),
    modelName: node.cloudA_model_name ?? header(CLOUDA_HEADER.modelName) ?? stored.modelName,
    deploymentName: node.cloudA_deployment_name ?? stored.deploymentName,
    authMode: stored.authMode ?? 'auto',
    credential: credentialOf(node, saved, headers),
  };
  if (settings.credential === undefined && customHost === undefined) {
    throw new GatewayError(
      'AIGW_ERR_MISSING_PROVIDER_KEY',
      'No credentials for provider "azure-openai": send Authorization: Bearer <api key or Entra token>, set api_key, or use a saved provider.',
      { param: 'authorization' },
    );
  }
  const result = { options: { azure: settings } };
  if (customHost !== undefined) return result;
  return { ...result, baseUrl: publicBaseUrl(settings.kind, node, stored, header(CLOUDA_HEADER.resourceName)) };
}

/** Narrows `ResolvedTarget.options.azure` back to the settings resolveAzureOptions stored. */
export function azureSettingsOf(options: Readonly<Record<string, unknown>>): AzureSettings {
  const settings = options['azure'];
  if (typeof settings !== 'object' || settings === null || !('kind' in settings) || !('deployments' in settings)) {
    throw new GatewayError('AIGW_ERR_INTERNAL', 'azure-openai target was resolved without its settings.');
  }
  return settings as AzureSettings;
}

const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/;

/** Whether an Azure OpenAI resource gets the credential as a bearer token (Entra ID) rather than `api-key`. */
export function prefersBearer(settings: AzureSettings): boolean {
  return settings.authMode === 'entra' || (settings.authMode === 'auto' && settings.credential !== undefined && JWT.test(settings.credential));
}

/** The resource's origin (a custom host may end in /openai): the data-plane paths start with /openai under it. */
export function azureResourceRoot(baseUrl: string): string {
  return baseUrl.replace(/\/openai$/, '');
}

function publicBaseUrl(
  kind: AzureSettings['kind'],
  node: RoutingConfig,
  stored: SavedAzureOptions,
  headerResource: string | undefined,
): string {
  if (kind === 'openai') {
    const resource = node.resource_name ?? node.cloudA_resource_name ?? headerResource ?? stored.resourceName;
    if (resource === undefined) {
      throw missing('resource name', 'resource_name (or azure_resource_name / cloudA_resource_name, or the x-gateway-azure-resource-name header)', 'x-gateway-clouda-resource-name');
    }
    return `https://${hostLabel(resource, 'resource name')}.openai.azure.com`;
  }
  // Serverless endpoints are named after their deployment; managed ones have an endpoint name.
  const endpoint = node.cloudA_endpoint_name ?? stored.endpointName ?? node.cloudA_deployment_name ?? stored.deploymentName;
  const region = node.cloudA_region ?? stored.region;
  if (endpoint === undefined) throw missing('endpoint name', 'azure_endpoint_name (cloudA_endpoint_name)', 'x-gateway-config');
  if (region === undefined) throw missing('region', 'azure_region (cloudA_region)', 'x-gateway-config');
  const domain = kind === 'serverless' ? 'models.ai.azure.com' : 'inference.ml.azure.com';
  return `https://${hostLabel(endpoint.toLowerCase(), 'endpoint name')}.${hostLabel(region, 'region')}.${domain}`;
}

function deploymentsOf(node: RoutingConfig, stored: SavedAzureOptions): AzureDeployment[] {
  if (node.deployments !== undefined) {
    return node.deployments.map((d) => ({
      deploymentId: d.deployment_id,
      alias: d.alias,
      apiVersion: d.api_version,
      isDefault: d.is_default === true,
    }));
  }
  return (stored.deployments ?? []).map((d) => ({ ...d, isDefault: d.isDefault === true }));
}

function credentialOf(node: RoutingConfig, saved: SavedProvider | undefined, headers: IncomingHttpHeaders): string | undefined {
  return (
    nonEmpty(saved?.apiKey) ??
    nonEmpty(node.api_key) ??
    bearer(node.Authorization) ??
    bearer(headerValue(headers['authorization']))
  );
}

function savedOptions(saved: SavedProvider | undefined): SavedAzureOptions {
  const parsed = SavedAzureOptionsSchema.safeParse(saved?.options ?? {}, { reportInput: true });
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.flatMap((issue) => fromZodIssue(issue, ['options'])).map((issue) => formatIssue(issue)).join('; ');
  throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Saved provider "${saved?.slug ?? ''}" has invalid azure-openai options: ${problems}`, {
    param: 'options',
  });
}

function hostLabel(value: string, what: string): string {
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(value)) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `azure-openai ${what} "${value}" is not a valid host name label.`, {
      param: 'x-gateway-config',
    });
  }
  return value;
}

function missing(what: string, keys: string, param: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_CONFIG', `azure-openai needs a ${what}: set ${keys}, or a custom host.`, { param });
}

function bearer(value: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '');
  return match?.[1];
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
