// The routing Config object (spec "Config object") as one recursive zod schema:
// the shape of configs sent inline in `x-gateway-config` and of saved configs in
// the gateway state file. Rules that relate several keys (key sets, strategy vs
// targets, conditional target names) live in routing-config-rules.ts;
// parseRoutingConfig() in routing-config-validation.ts applies both.
import { z } from 'zod';
import {
  AfterRequestHookSchema,
  BeforeRequestHookSchema,
  InputGuardrailSchema,
  OutputGuardrailSchema,
} from './routing-config-hooks-schema.ts';
import {
  NonEmptyStringSchema,
  PlainObjectSchema,
  StatusCodeListSchema,
} from './routing-config-primitives.ts';

export const STRATEGY_MODES = ['single', 'loadbalance', 'fallback', 'conditional'] as const;
export const StrategyModeSchema = z.enum(STRATEGY_MODES);

/** One branch of a conditional strategy: a query over metadata/params and the `name` of the target it picks. */
export const StrategyConditionSchema = z.strictObject({
  query: PlainObjectSchema.describe("Filter over the request's metadata and params (e.g. {\"metadata.tier\": {\"$eq\": \"paid\"}}) that selects this branch."),
  then: NonEmptyStringSchema.describe('`name` of the target used when the query matches.'),
});

export const StrategySchema = z.strictObject({
  mode: StrategyModeSchema.describe('single, loadbalance (by weight), fallback (next target on on_status_codes) or conditional (first matching condition).'),
  conditions: z.array(StrategyConditionSchema).min(1).optional().describe('Conditional mode: branches tried in order.'),
  default: NonEmptyStringSchema.optional().describe('Conditional mode: `name` of the target used when no condition matches.'),
  on_status_codes: StatusCodeListSchema.optional().describe('Fallback mode: upstream status codes that move on to the next target.'),
});

export const CACHE_MODES = ['simple', 'semantic'] as const;
export const CacheModeSchema = z.enum(CACHE_MODES);

export const CacheSettingsSchema = z.strictObject({
  mode: CacheModeSchema.describe('simple (exact request match) or semantic (similar prompts).'),
  /** Seconds (DESIGN §2); default 7 days. */
  max_age: z.int().min(0).optional().describe('Seconds an answer stays cached (default 7 days).'),
});

/** DESIGN §2: retries are capped at 5 attempts. */
export const MAX_RETRY_ATTEMPTS = 5;

export const RetrySettingsSchema = z.strictObject({
  attempts: z.int().min(0).max(MAX_RETRY_ATTEMPTS).describe('Retries after the first attempt (0 to 5).'),
  on_status_codes: StatusCodeListSchema.optional().describe('Upstream status codes that are retried (default 429 and 5xx).'),
  use_retry_after_headers: z.boolean().optional().describe("Wait as the provider's Retry-After / Retry-After-ms headers say (default false)."),
});

export const MIN_COOLDOWN_INTERVAL_MS = 30_000;

export const CircuitBreakerSettingsSchema = z.strictObject({
  failure_threshold: z.number().min(1).describe('Failures after which the circuit opens (at least 1).'),
  cooldown_interval: z.number().min(MIN_COOLDOWN_INTERVAL_MS).describe('Milliseconds the circuit stays open before a trial request (at least 30000).'),
  failure_status_codes: StatusCodeListSchema.optional().describe('Upstream status codes counted as failures (default: above 500).'),
});

export const DeploymentSchema = z.strictObject({
  deployment_id: NonEmptyStringSchema.describe('Deployment of the model at the provider.'),
  alias: NonEmptyStringSchema.describe('Model name clients use to pick this deployment.'),
  api_version: NonEmptyStringSchema.describe('API version of the deployment.'),
  is_default: z.boolean().optional().describe('Used when the request names no alias.'),
});

/** `@slug` refers to a saved provider; anything else is a provider name. A bare `@` is neither. */
const ProviderSchema = z.string().regex(/^(?:@.+|[^@].*)$/s, { error: 'must be a provider name or an @slug of a saved provider' });

/** Same limits as the upstream resolver applies (resolve-target.ts), reported at config time. */
const CustomHostSchema = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL', abort: true })
  .refine(
    (value) => {
      const url = URL.parse(value);
      return url !== null && url.username === '' && url.password === '' && url.search === '' && url.hash === '';
    },
    { error: 'must not carry credentials, a query or a fragment' },
  );

const AuthorizationSchema = z.string().regex(/^Bearer\s+\S+$/i, { error: 'must have the form "Bearer <TOKEN>"' });

const optionalString = NonEmptyStringSchema.optional();

/**
 * A routing config. `targets` items are configs themselves (recursive).
 *
 * @example
 * RoutingConfigSchema.parse({ strategy: { mode: 'fallback' }, targets: [{ provider: '@openai-prod' }, { virtual_key: 'vk-b' }] })
 */
export const RoutingConfigSchema = z.strictObject({
  strategy: StrategySchema.optional().describe('How the targets are used; needs `targets`.'),
  get targets(): z.ZodOptional<z.ZodArray<typeof RoutingConfigSchema>> {
    return z.array(RoutingConfigSchema).min(1).optional().describe('Targets of the strategy; each one is a config itself (provider, overrides, retry, nested strategy...).');
  },
  provider: ProviderSchema.optional().describe('A provider name (e.g. openai) or "@<name>" of a saved Provider (which carries the credential).'),
  api_key: optionalString.describe('Provider credential (never in a GatewayConfig: use a Provider with apiKeySecretRef).'),
  virtual_key: optionalString.describe('Legacy identifier of a saved Provider (its virtualKey).'),
  custom_host: CustomHostSchema.optional().describe('Base URL of a privately hosted model (http(s); no credentials, query or fragment); used with provider.'),
  name: optionalString.describe('Name of this target, referenced by conditional strategies (then, default).'),
  strict_vendorA_compliance: z.boolean().optional().describe("The spec's name for strict_openai_compliance."),
  resource_name: optionalString.describe('Resource name of a cloud deployment (provider-specific).'),
  deployment_id: optionalString.describe('Deployment id at the provider (provider-specific).'),
  api_version: optionalString.describe('API version sent to the provider (provider-specific).'),
  deployments: z.array(DeploymentSchema).optional().describe("Deployments the request's model alias selects from (provider-specific)."),
  override_params: PlainObjectSchema.optional().describe("Body parameters that replace the request's own (model, temperature, max_tokens...)."),
  prompt_id: optionalString.describe('A stored Prompt rendered for this target.'),
  /** Milliseconds. */
  request_timeout: z.int().min(1).optional().describe('Milliseconds before an upstream request is abandoned (then retried or failed over).'),
  cache: CacheSettingsSchema.optional().describe('Response caching.'),
  retry: RetrySettingsSchema.optional().describe('Retries of failed upstream requests.'),
  cb_config: CircuitBreakerSettingsSchema.optional().describe('Circuit breaker per target.'),
  weight: z.number().min(0).optional().describe('Share of traffic in loadbalance mode (relative to the other targets).'),
  on_status_codes: StatusCodeListSchema.optional().describe('Upstream status codes that trigger the fallback (fallback mode).'),
  forward_headers: z.array(NonEmptyStringSchema).optional().describe('Names of request headers forwarded to the provider unprocessed.'),
  before_request_hooks: z.array(BeforeRequestHookSchema).optional().describe('Checks run on the request before it is sent (may deny).'),
  after_request_hooks: z.array(AfterRequestHookSchema).optional().describe('Checks run on the answer (may run async).'),
  input_guardrails: z.array(InputGuardrailSchema).optional().describe('Guardrails on the request: names of saved Guardrails or inline guardrails.'),
  output_guardrails: z.array(OutputGuardrailSchema).optional().describe('Guardrails on the answer: names of saved Guardrails or inline guardrails.'),
  // Real vendor names first; the spec's anonymised names below stay accepted. A config is
  // read with the real names renamed to the spec's (config/vendor-names.ts), so code reads
  // only the spec's; these entries let a GatewayConfig resource carry the real names.
  openai_organization: optionalString.describe('OpenAI: organization header (the spec\'s vendorA_organization).'),
  openai_project: optionalString.describe('OpenAI: project header (the spec\'s vendorA_project).'),
  strict_openai_compliance: z.boolean().optional().describe('OpenAI only: send exactly the vendor\'s API fields (the spec\'s strict_vendorA_compliance).'),
  vertex_project_id: optionalString.describe('Vertex AI: project id (the spec\'s cloudB_project_id).'),
  vertex_region: optionalString.describe('Vertex AI: region (the spec\'s cloudB_region).'),
  vertex_service_account_json: PlainObjectSchema.optional().describe('Vertex AI: service account key (a credential: use a Provider instead).'),
  azure_region: optionalString.describe('Azure AI inference: region (the spec\'s cloudA_region).'),
  azure_deployment_name: optionalString.describe('Azure AI inference: deployment name (the spec\'s cloudA_deployment_name).'),
  azure_endpoint_name: optionalString.describe('Azure AI inference: endpoint name (the spec\'s cloudA_endpoint_name).'),
  azure_api_version: optionalString.describe('Azure: API version (the spec\'s cloudA_api_version).'),
  azure_deployment_type: z.enum(['serverless', 'managed']).optional().describe('Azure AI inference: serverless or managed (the spec\'s cloudA_deployment_type).'),
  azure_resource_name: optionalString.describe('Azure OpenAI: resource name (the spec\'s cloudA_resource_name).'),
  azure_deployment_id: optionalString.describe('Azure OpenAI: deployment id (the spec\'s cloudA_deployment_id).'),
  azure_model_name: optionalString.describe('Azure AI inference: model name (the spec\'s cloudA_model_name).'),
  aws_access_key_id: optionalString.describe('Bedrock: AWS access key id (a credential: use a Provider instead).'),
  aws_secret_access_key: optionalString.describe('Bedrock: AWS secret access key (a credential: use a Provider instead).'),
  aws_region: optionalString.describe('Bedrock: AWS region (the spec\'s cloudC_region).'),
  aws_session_token: optionalString.describe('Bedrock: AWS session token (a credential: use a Provider instead).'),
  vendorA_organization: optionalString.describe('The spec\'s name for openai_organization.'),
  vendorA_project: optionalString.describe('The spec\'s name for openai_project.'),
  cloudB_project_id: optionalString.describe('The spec\'s name for vertex_project_id.'),
  cloudB_region: optionalString.describe('The spec\'s name for vertex_region.'),
  cloudB_service_account_json: PlainObjectSchema.optional().describe('The spec\'s name for vertex_service_account_json (a credential: use a Provider instead).'),
  cloudA_region: optionalString.describe('The spec\'s name for azure_region.'),
  cloudA_deployment_name: optionalString.describe('The spec\'s name for azure_deployment_name.'),
  cloudA_endpoint_name: optionalString.describe('The spec\'s name for azure_endpoint_name.'),
  cloudA_api_version: optionalString.describe('The spec\'s name for azure_api_version.'),
  cloudA_deployment_type: z.enum(['serverless', 'managed']).optional().describe('The spec\'s name for azure_deployment_type.'),
  cloudA_resource_name: optionalString.describe('The spec\'s name for azure_resource_name.'),
  cloudA_deployment_id: optionalString.describe('The spec\'s name for azure_deployment_id.'),
  cloudA_model_name: optionalString.describe('The spec\'s name for azure_model_name.'),
  cloudC_access_key_id: optionalString.describe('The spec\'s name for aws_access_key_id (a credential: use a Provider instead).'),
  cloudC_secret_access_key: optionalString.describe('The spec\'s name for aws_secret_access_key (a credential: use a Provider instead).'),
  cloudC_region: optionalString.describe('The spec\'s name for aws_region.'),
  cloudC_session_token: optionalString.describe('The spec\'s name for aws_session_token (a credential: use a Provider instead).'),
  Authorization: AuthorizationSchema.optional().describe('"Bearer <TOKEN>" sent to the provider (a credential: use a Provider instead).'),
});

export type RoutingConfig = z.infer<typeof RoutingConfigSchema>;
export type RoutingConfigKey = keyof RoutingConfig;
export type StrategyMode = z.infer<typeof StrategyModeSchema>;
export type StrategyCondition = z.infer<typeof StrategyConditionSchema>;
export type Strategy = z.infer<typeof StrategySchema>;
export type CacheMode = z.infer<typeof CacheModeSchema>;
export type CacheSettings = z.infer<typeof CacheSettingsSchema>;
export type RetrySettings = z.infer<typeof RetrySettingsSchema>;
export type CircuitBreakerSettings = z.infer<typeof CircuitBreakerSettingsSchema>;
export type Deployment = z.infer<typeof DeploymentSchema>;
export type {
  AfterRequestHook,
  BeforeRequestHook,
  DenyingHookOutcome,
  GuardrailSettings,
  HookCheck,
  HookFeedback,
  HookOutcome,
  HookSettings,
  InputGuardrail,
  OutputGuardrail,
} from './routing-config-hooks-schema.ts';
