// The spec's SDK client parameters (Authentication part) and the headers they become.
// One table drives createHeaders, the Gateway client and the docs; the Python SDK has the
// same table, and test/sdk/header-mapping.json holds both to the same mapping.

/** A routing config (docs/configuration.md): sent as JSON in `x-gateway-config`. */
export interface GatewayConfig {
  provider?: string;
  api_key?: string;
  virtual_key?: string;
  custom_host?: string;
  strategy?: {
    mode: 'single' | 'loadbalance' | 'fallback' | 'conditional';
    on_status_codes?: number[];
    conditions?: Array<{ query: Record<string, unknown>; then: string }>;
    default?: string;
  };
  targets?: GatewayConfig[];
  name?: string;
  weight?: number;
  override_params?: Record<string, unknown>;
  request_timeout?: number;
  retry?: { attempts?: number; on_status_codes?: number[]; use_retry_after_headers?: boolean };
  prompt_id?: string;
  forward_headers?: string[];
  /** Every other key of the spec's Config object (cache, cb_config, azure_*, hooks, …). */
  [key: string]: unknown;
}

/** `x-gateway-metadata`: the spec's special keys plus any others. */
export interface GatewayMetadata {
  _user?: string;
  _prompt?: string;
  _organisation?: string;
  _environment?: string;
  [key: string]: unknown;
}

/**
 * The spec's client parameters, camelCased. `undefined`, `null` and `''` leave the header
 * out (in per-request options, `null` removes a header the client sends by default).
 */
export interface GatewayParams {
  /** `x-gateway-api-key`: the gateway API key. */
  apiKey?: string | null | undefined;
  /** `x-gateway-provider`: a provider name (`openai`) or a saved provider's `@slug`. */
  provider?: string | null | undefined;
  /** `Authorization`: the provider token; `Bearer ` is prefixed unless present. */
  authorization?: string | null | undefined;
  /** `x-gateway-virtual-key`: saved provider credentials (legacy; prefer `provider: '@slug'`). */
  virtualKey?: string | null | undefined;
  /** `x-gateway-config`: a config object (sent as JSON) or the id of a saved config. */
  config?: GatewayConfig | string | null | undefined;
  /** `x-gateway-custom-host`: base URL of the provider, with its version segment. */
  customHost?: string | null | undefined;
  /** `x-gateway-trace-id`: ties requests together; the gateway generates one when absent. */
  traceId?: string | null | undefined;
  /** `x-gateway-metadata`: a JSON object for logs, rate-limit policies and conditional routing. */
  metadata?: GatewayMetadata | null | undefined;
  /** `x-gateway-cache-force-refresh`. */
  cacheForceRefresh?: boolean | null | undefined;
  /** `x-gateway-cache-namespace`. */
  cacheNamespace?: string | null | undefined;
  /** `x-gateway-request-timeout`: integer milliseconds (≥ 1). */
  requestTimeout?: number | null | undefined;
  /** `x-gateway-forward-headers`: names of request headers passed to the provider unprocessed, as written. */
  forwardHeaders?: readonly string[] | null | undefined;
  /** `x-gateway-azure-resource-name` (Azure OpenAI; the spec's `cloudAResourceName` names the same setting). */
  azureResourceName?: string | null | undefined;
  /** `x-gateway-azure-deployment-id` (Azure OpenAI; the spec's `cloudADeploymentId` names the same setting). */
  azureDeploymentId?: string | null | undefined;
  /** `x-gateway-azure-api-version` (Azure OpenAI; the spec's `cloudAApiVersion` names the same setting). */
  azureApiVersion?: string | null | undefined;
  /** `x-gateway-azure-model-name` (Azure OpenAI; the spec's `cloudAModelName` names the same setting). */
  azureModelName?: string | null | undefined;
  /** `x-gateway-vertex-project-id` (Vertex AI; the spec's `cloudBProjectId` names the same setting). */
  vertexProjectId?: string | null | undefined;
  /** `x-gateway-vertex-region` (Vertex AI; the spec's `cloudBRegion` names the same setting). */
  vertexRegion?: string | null | undefined;
  /** `x-gateway-aws-access-key-id` (Bedrock; the spec's `cloudCAccessKeyId` names the same setting). */
  awsAccessKeyId?: string | null | undefined;
  /** `x-gateway-aws-secret-access-key` (Bedrock; the spec's `cloudCSecretAccessKey` names the same setting). */
  awsSecretAccessKey?: string | null | undefined;
  /** `x-gateway-aws-region` (Bedrock; the spec's `cloudCRegion` names the same setting). */
  awsRegion?: string | null | undefined;
  /** `x-gateway-aws-session-token` (Bedrock; the spec's `cloudCSessionToken` names the same setting). */
  awsSessionToken?: string | null | undefined;
  /** The spec's names for the ten settings above: accepted aliases, sent under the spec's header names. */
  cloudAResourceName?: string | null | undefined;
  cloudADeploymentId?: string | null | undefined;
  cloudAApiVersion?: string | null | undefined;
  cloudAModelName?: string | null | undefined;
  cloudBProjectId?: string | null | undefined;
  cloudBRegion?: string | null | undefined;
  cloudCAccessKeyId?: string | null | undefined;
  cloudCSecretAccessKey?: string | null | undefined;
  cloudCRegion?: string | null | undefined;
  cloudCSessionToken?: string | null | undefined;
}

export type GatewayParamName = keyof GatewayParams;

type ParameterKind = 'string' | 'bearer' | 'config' | 'object' | 'boolean' | 'integer' | 'names';

export interface GatewayParameter {
  /** The JavaScript (camelCase) parameter name. */
  readonly js: GatewayParamName;
  /** The Python (snake_case) parameter name. */
  readonly python: string;
  /** The header it becomes, spelt as in the spec. */
  readonly header: string;
  readonly kind: ParameterKind;
  /** For a real vendor name (`azureResourceName`): the spec's name for the same setting (`cloudAResourceName`). */
  readonly sameAs?: GatewayParamName;
}

/** Every parameter, in the spec's order, then the real vendor names. */
export const GATEWAY_PARAMETERS: readonly GatewayParameter[] = Object.freeze([
  { js: 'apiKey', python: 'api_key', header: 'x-gateway-api-key', kind: 'string' },
  { js: 'provider', python: 'provider', header: 'x-gateway-provider', kind: 'string' },
  { js: 'authorization', python: 'authorization', header: 'Authorization', kind: 'bearer' },
  { js: 'virtualKey', python: 'virtual_key', header: 'x-gateway-virtual-key', kind: 'string' },
  { js: 'config', python: 'config', header: 'x-gateway-config', kind: 'config' },
  { js: 'customHost', python: 'custom_host', header: 'x-gateway-custom-host', kind: 'string' },
  { js: 'traceId', python: 'trace_id', header: 'x-gateway-trace-id', kind: 'string' },
  { js: 'metadata', python: 'metadata', header: 'x-gateway-metadata', kind: 'object' },
  { js: 'cacheForceRefresh', python: 'cache_force_refresh', header: 'x-gateway-cache-force-refresh', kind: 'boolean' },
  { js: 'cacheNamespace', python: 'cache_namespace', header: 'x-gateway-cache-namespace', kind: 'string' },
  { js: 'requestTimeout', python: 'request_timeout', header: 'x-gateway-request-timeout', kind: 'integer' },
  { js: 'forwardHeaders', python: 'forward_headers', header: 'x-gateway-forward-headers', kind: 'names' },
  { js: 'cloudAResourceName', python: 'cloud_a_resource_name', header: 'x-gateway-cloudA-resource-name', kind: 'string' },
  { js: 'cloudADeploymentId', python: 'cloud_a_deployment_id', header: 'x-gateway-cloudA-deployment-id', kind: 'string' },
  { js: 'cloudAApiVersion', python: 'cloud_a_api_version', header: 'x-gateway-cloudA-api-version', kind: 'string' },
  { js: 'cloudAModelName', python: 'cloud_a_model_name', header: 'x-gateway-cloudA-model-name', kind: 'string' },
  { js: 'cloudBProjectId', python: 'cloud_b_project_id', header: 'x-gateway-cloudB-project-id', kind: 'string' },
  { js: 'cloudBRegion', python: 'cloud_b_region', header: 'x-gateway-cloudB-region', kind: 'string' },
  { js: 'cloudCAccessKeyId', python: 'cloud_c_access_key_id', header: 'x-gateway-cloudC-access-key-id', kind: 'string' },
  { js: 'cloudCSecretAccessKey', python: 'cloud_c_secret_access_key', header: 'x-gateway-cloudC-secret-access-key', kind: 'string' },
  { js: 'cloudCRegion', python: 'cloud_c_region', header: 'x-gateway-cloudC-region', kind: 'string' },
  { js: 'cloudCSessionToken', python: 'cloud_c_session_token', header: 'x-gateway-cloudC-session-token', kind: 'string' },
  // Real vendor names (the gateway accepts their headers as aliases of the spec's).
  { js: 'azureResourceName', python: 'azure_resource_name', header: 'x-gateway-azure-resource-name', kind: 'string', sameAs: 'cloudAResourceName' },
  { js: 'azureDeploymentId', python: 'azure_deployment_id', header: 'x-gateway-azure-deployment-id', kind: 'string', sameAs: 'cloudADeploymentId' },
  { js: 'azureApiVersion', python: 'azure_api_version', header: 'x-gateway-azure-api-version', kind: 'string', sameAs: 'cloudAApiVersion' },
  { js: 'azureModelName', python: 'azure_model_name', header: 'x-gateway-azure-model-name', kind: 'string', sameAs: 'cloudAModelName' },
  { js: 'vertexProjectId', python: 'vertex_project_id', header: 'x-gateway-vertex-project-id', kind: 'string', sameAs: 'cloudBProjectId' },
  { js: 'vertexRegion', python: 'vertex_region', header: 'x-gateway-vertex-region', kind: 'string', sameAs: 'cloudBRegion' },
  { js: 'awsAccessKeyId', python: 'aws_access_key_id', header: 'x-gateway-aws-access-key-id', kind: 'string', sameAs: 'cloudCAccessKeyId' },
  { js: 'awsSecretAccessKey', python: 'aws_secret_access_key', header: 'x-gateway-aws-secret-access-key', kind: 'string', sameAs: 'cloudCSecretAccessKey' },
  { js: 'awsRegion', python: 'aws_region', header: 'x-gateway-aws-region', kind: 'string', sameAs: 'cloudCRegion' },
  { js: 'awsSessionToken', python: 'aws_session_token', header: 'x-gateway-aws-session-token', kind: 'string', sameAs: 'cloudCSessionToken' },
] as const satisfies readonly GatewayParameter[]);

const BY_NAME: ReadonlyMap<string, GatewayParameter> = new Map(GATEWAY_PARAMETERS.map((parameter) => [parameter.js, parameter]));

/** A real vendor name and the spec's name for the same setting, each to the other. */
export const SAME_SETTING: ReadonlyMap<string, GatewayParameter> = new Map(
  GATEWAY_PARAMETERS.flatMap((parameter) => {
    const spec = parameter.sameAs === undefined ? undefined : BY_NAME.get(parameter.sameAs);
    return spec === undefined ? [] : [[parameter.js, spec], [spec.js, parameter]] as Array<[string, GatewayParameter]>;
  }),
);

/** Thrown for a bad parameter or a missing gateway API key, before any request is sent. */
export class GatewayClientError extends Error {
  override readonly name = 'GatewayClientError';
}

/**
 * The gateway headers for the given parameters.
 *
 * @example
 * createHeaders({ apiKey: 'gw-…', provider: '@openai-prod', metadata: { _user: 'u-1' } })
 * // → { 'x-gateway-api-key': 'gw-…', 'x-gateway-provider': '@openai-prod', 'x-gateway-metadata': '{"_user":"u-1"}' }
 */
export function createHeaders(params: GatewayParams): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(nullableHeaders(params))) if (value !== null) headers[name] = value;
  return headers;
}

/**
 * Like createHeaders, but a parameter given as `null` maps to a `null` header: in the
 * openai SDK's request options that removes a header the client sends by default.
 */
export function nullableHeaders(params: GatewayParams): Record<string, string | null> {
  const headers: Record<string, string | null> = {};
  for (const [name, value] of Object.entries(params) as Array<[string, unknown]>) {
    const parameter = BY_NAME.get(name);
    if (parameter === undefined) throw new GatewayClientError(unknownParameterMessage(name));
    if (value === undefined) continue;
    const other = SAME_SETTING.get(name);
    if (other !== undefined) {
      const otherValue = (params as Record<string, unknown>)[other.js];
      if (isSet(value) && isSet(otherValue)) throw new GatewayClientError(`${name} and ${other.js} name the same setting: pass one of them.`);
      // The value replaces a client default sent under the other name.
      if (!isSet(otherValue)) headers[other.header] = null;
    }
    if (value === null || value === '') {
      if (value === null) headers[parameter.header] = null;
      continue;
    }
    headers[parameter.header] = headerValue(parameter, value);
  }
  return headers;
}

function headerValue(parameter: GatewayParameter, value: unknown): string {
  const text = encode(parameter, value);
  // Visible ASCII, space and tab: what every HTTP stack accepts, and no header injection.
  if (!/^[\t\x20-\x7e]*$/.test(text)) {
    throw new GatewayClientError(`${parameter.js} must contain only printable ASCII characters (it becomes the ${parameter.header} header).`);
  }
  return text;
}

function encode(parameter: GatewayParameter, value: unknown): string {
  const { js } = parameter;
  switch (parameter.kind) {
    case 'string':
      if (typeof value !== 'string') throw new GatewayClientError(`${js} must be a string.`);
      return value;
    case 'bearer':
      if (typeof value !== 'string') throw new GatewayClientError(`${js} must be a string (the provider token).`);
      return /^bearer\s/i.test(value) ? value : `Bearer ${value}`;
    case 'config':
      if (typeof value === 'string') return value;
      if (!isPlainObject(value)) throw new GatewayClientError(`${js} must be a config object or the id of a saved config.`);
      return encodeJson(value);
    case 'object':
      if (!isPlainObject(value)) throw new GatewayClientError(`${js} must be an object.`);
      return encodeJson(value);
    case 'boolean':
      if (typeof value !== 'boolean') throw new GatewayClientError(`${js} must be true or false.`);
      return String(value);
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
        throw new GatewayClientError(`${js} must be a whole number of milliseconds, at least 1.`);
      }
      return String(value);
    case 'names':
      if (!Array.isArray(value) || !value.every((name) => typeof name === 'string' && HEADER_NAME.test(name))) {
        throw new GatewayClientError(`${js} must be an array of header names.`);
      }
      return encodeJson(value);
  }
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * JSON with every character outside printable ASCII escaped as `\uXXXX` (lower-case hex,
 * like Python's `json.dumps`): header values must be ASCII, and the gateway's JSON.parse
 * reads the escapes back.
 */
export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new GatewayClientError('The value cannot be encoded as JSON.');
  return text.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function unknownParameterMessage(name: string): string {
  const suggestion = nearestParameter(name);
  return `Unknown gateway parameter "${name}"${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}.`;
}

/** The closest parameter name, ignoring case and `_`, when it is at most two edits away. */
function nearestParameter(name: string): string | undefined {
  const wanted = normalise(name);
  let best: { name: string; distance: number } | undefined;
  for (const parameter of GATEWAY_PARAMETERS) {
    const distance = editDistance(wanted, normalise(parameter.js));
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name: parameter.js, distance };
  }
  return best?.name;
}

function normalise(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '');
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
