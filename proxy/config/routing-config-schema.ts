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
  query: PlainObjectSchema,
  then: NonEmptyStringSchema,
});

export const StrategySchema = z.strictObject({
  mode: StrategyModeSchema,
  conditions: z.array(StrategyConditionSchema).min(1).optional(),
  default: NonEmptyStringSchema.optional(),
  on_status_codes: StatusCodeListSchema.optional(),
});

export const CACHE_MODES = ['simple', 'semantic'] as const;
export const CacheModeSchema = z.enum(CACHE_MODES);

export const CacheSettingsSchema = z.strictObject({
  mode: CacheModeSchema,
  /** Seconds (DESIGN §2); default 7 days. */
  max_age: z.int().min(0).optional(),
});

/** DESIGN §2: retries are capped at 5 attempts. */
export const MAX_RETRY_ATTEMPTS = 5;

export const RetrySettingsSchema = z.strictObject({
  attempts: z.int().min(0).max(MAX_RETRY_ATTEMPTS),
  on_status_codes: StatusCodeListSchema.optional(),
  use_retry_after_headers: z.boolean().optional(),
});

export const MIN_COOLDOWN_INTERVAL_MS = 30_000;

export const CircuitBreakerSettingsSchema = z.strictObject({
  failure_threshold: z.number().min(1),
  cooldown_interval: z.number().min(MIN_COOLDOWN_INTERVAL_MS),
  failure_status_codes: StatusCodeListSchema.optional(),
});

export const DeploymentSchema = z.strictObject({
  deployment_id: NonEmptyStringSchema,
  alias: NonEmptyStringSchema,
  api_version: NonEmptyStringSchema,
  is_default: z.boolean().optional(),
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
  strategy: StrategySchema.optional(),
  get targets(): z.ZodOptional<z.ZodArray<typeof RoutingConfigSchema>> {
    return z.array(RoutingConfigSchema).min(1).optional();
  },
  provider: ProviderSchema.optional(),
  api_key: optionalString,
  virtual_key: optionalString,
  custom_host: CustomHostSchema.optional(),
  name: optionalString,
  strict_vendorA_compliance: z.boolean().optional(),
  resource_name: optionalString,
  deployment_id: optionalString,
  api_version: optionalString,
  deployments: z.array(DeploymentSchema).optional(),
  override_params: PlainObjectSchema.optional(),
  prompt_id: optionalString,
  /** Milliseconds. */
  request_timeout: z.int().min(1).optional(),
  cache: CacheSettingsSchema.optional(),
  retry: RetrySettingsSchema.optional(),
  cb_config: CircuitBreakerSettingsSchema.optional(),
  weight: z.number().min(0).optional(),
  on_status_codes: StatusCodeListSchema.optional(),
  forward_headers: z.array(NonEmptyStringSchema).optional(),
  before_request_hooks: z.array(BeforeRequestHookSchema).optional(),
  after_request_hooks: z.array(AfterRequestHookSchema).optional(),
  input_guardrails: z.array(InputGuardrailSchema).optional(),
  output_guardrails: z.array(OutputGuardrailSchema).optional(),
  vendorA_organization: optionalString,
  vendorA_project: optionalString,
  cloudB_project_id: optionalString,
  cloudB_region: optionalString,
  cloudB_service_account_json: PlainObjectSchema.optional(),
  cloudA_region: optionalString,
  cloudA_deployment_name: optionalString,
  cloudA_endpoint_name: optionalString,
  cloudA_api_version: optionalString,
  cloudA_deployment_type: z.enum(['serverless', 'managed']).optional(),
  cloudA_resource_name: optionalString,
  cloudA_deployment_id: optionalString,
  cloudA_model_name: optionalString,
  cloudC_access_key_id: optionalString,
  cloudC_secret_access_key: optionalString,
  cloudC_region: optionalString,
  cloudC_session_token: optionalString,
  Authorization: AuthorizationSchema.optional(),
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
