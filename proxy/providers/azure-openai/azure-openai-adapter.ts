import type { InferenceEndpoint } from '../../openai/inference-endpoint.ts';
import { GatewayError } from '../../errors.ts';
import { azureResourceRoot, azureSettingsOf, prefersBearer, resolveAzureOptions, type AzureSettings } from './azure-openai-options.ts';
import { forwardedUrl } from '../openai/openai-adapter.ts';
import type { ForwardedCall, ForwardedRequest, PlanInput, ProviderAdapter, ProviderFamily, ResolvedTarget, UpstreamRequestPlan } from '../provider-adapter.ts';
import { normaliseProviderError } from '../provider-errors.ts';

// Azure OpenAI (`azure-openai`, the spec's cloudA). Bodies and answers are OpenAI-shaped,
// so bytes pass through untouched; only the URL and the credential header are Azure's:
//
//   openai (default)  https://{resource}.openai.azure.com/openai/deployments/{deployment}/
//                     {chat/completions|completions|embeddings}?api-version={version}
//                     responses: https://{resource}.openai.azure.com/openai/v1/responses
//                     (the v1 API: no api-version; the deployment goes in body.model)
//   serverless        https://{endpoint}.{region}.models.ai.azure.com/{chat/completions|embeddings}
//   managed           https://{endpoint}.{region}.inference.ml.azure.com/score (chat only)
//   forwarded routes  https://{resource}.openai.azure.com/openai/{files|batches|…}?api-version={version}
//                     without an api version: …/openai/v1/{files|batches|…} (the v1 API)
//
// A custom host replaces the scheme and host (a trailing /openai is tolerated).
// Auth: Azure OpenAI takes an API key in `api-key` or an Entra ID token as
// `Authorization: Bearer`; authMode `auto` (default) sends a JWT-shaped token as bearer
// and anything else as api-key. Azure AI inference endpoints take `Authorization: Bearer`.

const DEPLOYMENT_PATHS: Readonly<Partial<Record<InferenceEndpoint, string>>> = {
  'chat.completions': 'chat/completions',
  completions: 'completions',
  embeddings: 'embeddings',
};

const SERVERLESS_PATHS: Readonly<Partial<Record<InferenceEndpoint, string>>> = {
  'chat.completions': '/chat/completions',
  embeddings: '/embeddings',
};

export const azureOpenAIAdapter: ProviderAdapter = {
  family: 'azure-openai',
  supportsEndpoint: (endpoint) => endpoint in DEPLOYMENT_PATHS || endpoint === 'responses',
  planRequest(input: PlanInput): UpstreamRequestPlan {
    const settings = azureSettingsOf(input.target.options);
    if (settings.kind === 'openai') return planAzureOpenAI(input, settings);
    return planInference(input, settings);
  },
  forward: forwardAzureOpenAI,
  normaliseError: normaliseProviderError,
};

function forwardAzureOpenAI(target: ResolvedTarget, call: ForwardedCall): ForwardedRequest {
  const settings = azureSettingsOf(target.options);
  const query = new URLSearchParams(call.query);
  // The GA data-plane API takes ?api-version=; without one, the v1 API.
  let base = `${azureResourceRoot(target.baseUrl)}/openai`;
  if (settings.apiVersion !== undefined) query.set('api-version', settings.apiVersion);
  else base += '/v1';
  const headers = { ...target.headers, ...call.headers, ...credentialHeader(settings, prefersBearer(settings)) };
  return { url: forwardedUrl(base, call.path, query), method: call.method, headers, body: call.body ?? null };
}

function planAzureOpenAI({ target, endpoint, body, bodyChanged }: PlanInput, settings: AzureSettings): UpstreamRequestPlan {
  const base = azureResourceRoot(target.baseUrl);
  const headers = { 'content-type': 'application/json', ...credentialHeader(settings, prefersBearer(settings)) };
  const model = typeof body['model'] === 'string' ? body['model'] : undefined;
  if (endpoint === 'responses') {
    // The v1 API routes by body.model, which must name the deployment.
    const deployment = pickDeployment(settings, model, false);
    const rewritten = deployment !== undefined && deployment.deploymentId !== model;
    return {
      url: `${base}/openai/v1/responses`,
      method: 'POST',
      headers,
      body: rewritten ? JSON.stringify({ ...body, model: deployment.deploymentId }) : bodyChanged ? JSON.stringify(body) : undefined,
    };
  }
  const deployment = pickDeployment(settings, model, true);
  const path = DEPLOYMENT_PATHS[endpoint];
  if (deployment === undefined || path === undefined) throw unsupported(target.provider, endpoint);
  if (deployment.apiVersion === undefined) {
    throw new GatewayError(
      'AIGW_ERR_INVALID_CONFIG',
      'azure-openai needs an API version: set api_version (or azure_api_version / cloudA_api_version, or the x-gateway-azure-api-version header).',
      { param: 'x-gateway-clouda-api-version' },
    );
  }
  return {
    url: `${base}/openai/deployments/${encodeURIComponent(deployment.deploymentId)}/${path}?api-version=${encodeURIComponent(deployment.apiVersion)}`,
    method: 'POST',
    headers,
    body: bodyChanged ? JSON.stringify(body) : undefined,
  };
}

function planInference({ target, endpoint, body, bodyChanged }: PlanInput, settings: AzureSettings): UpstreamRequestPlan {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...credentialHeader(settings, true) };
  let url: string;
  if (settings.kind === 'managed') {
    if (endpoint !== 'chat.completions') throw unsupported(target.provider, endpoint, 'a managed online endpoint');
    url = `${target.baseUrl}/score`;
    if (settings.deploymentName !== undefined) headers['azureml-model-deployment'] = settings.deploymentName;
  } else {
    const path = SERVERLESS_PATHS[endpoint];
    if (path === undefined) throw unsupported(target.provider, endpoint, 'a serverless endpoint');
    url = target.baseUrl + path;
    if (settings.apiVersion !== undefined) url += `?api-version=${encodeURIComponent(settings.apiVersion)}`;
  }
  const renamed = settings.modelName !== undefined && settings.modelName !== body['model'];
  return {
    url,
    method: 'POST',
    headers,
    body: renamed ? JSON.stringify({ ...body, model: settings.modelName }) : bodyChanged ? JSON.stringify(body) : undefined,
  };
}

/**
 * Which deployment serves the request: the `deployments` entry whose alias is the
 * request's model, else the explicit deployment id, else the `is_default` entry.
 */
export function pickDeployment(
  settings: AzureSettings,
  model: string | undefined,
  required: boolean,
): { deploymentId: string; apiVersion: string | undefined } | undefined {
  const byAlias = settings.deployments.find((d) => d.alias === model);
  if (byAlias !== undefined) return byAlias;
  if (settings.deploymentId !== undefined) return { deploymentId: settings.deploymentId, apiVersion: settings.apiVersion };
  const fallback = settings.deployments.find((d) => d.isDefault);
  if (fallback !== undefined) return fallback;
  if (!required) return undefined;
  if (settings.deployments.length > 0) {
    throw new GatewayError(
      'AIGW_ERR_INVALID_BODY',
      `No azure-openai deployment for model "${model ?? ''}": no deployments[].alias matches and none is_default.`,
      { param: 'model' },
    );
  }
  throw new GatewayError(
    'AIGW_ERR_INVALID_CONFIG',
    'azure-openai needs a deployment: set deployment_id (or azure_deployment_id / cloudA_deployment_id, the x-gateway-azure-deployment-id header, or deployments).',
    { param: 'x-gateway-clouda-deployment-id' },
  );
}

/** The credential in Azure's form: `Authorization: Bearer` or `api-key`; none with a keyless custom host. */
function credentialHeader(settings: AzureSettings, asBearer: boolean): Record<string, string> {
  if (settings.credential === undefined) return {};
  return asBearer ? { authorization: `Bearer ${settings.credential}` } : { 'api-key': settings.credential };
}

function unsupported(provider: string, endpoint: InferenceEndpoint, where?: string): GatewayError {
  const route = `/v1/${endpoint.replace('.', '/')}`;
  return new GatewayError(
    'AIGW_ERR_UNSUPPORTED_ENDPOINT',
    `Provider "${provider}" has no ${route} endpoint${where === undefined ? '' : ` on ${where}`}.`,
    { param: 'x-gateway-provider' },
  );
}

export const azureOpenAIFamily: ProviderFamily = {
  name: 'azure-openai',
  baseUrl: undefined,
  adapter: azureOpenAIAdapter,
  // The credential may also come from Authorization or a config's Authorization key;
  // resolveAzureOptions checks that one is there.
  requiresApiKey: false,
  resolveOptions: resolveAzureOptions,
};
