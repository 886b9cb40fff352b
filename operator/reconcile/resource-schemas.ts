import { z } from 'zod';
import {
  DenyingHookOutcomeSchema,
  HookCheckSchema,
} from '../../proxy/config/routing-config-hooks-schema.ts';
import { RoutingConfigSchema } from '../../proxy/config/routing-config-schema.ts';
import { ApiKeyEntrySchema, CatalogModelEntrySchema, ProviderEntrySchema } from '../../proxy/config/state-schema.ts';
import { PromptEntrySchema } from '../../proxy/prompts/prompt-schema.ts';
import { RateLimitPolicySchema } from '../../proxy/ratelimit/policy-schema.ts';
import { UsageLimitPolicyObjectSchema } from '../../proxy/budgets/usage-limit-schema.ts';
import { ModelPriceEntrySchema } from '../../proxy/config/state-schema.ts';
import { McpServerFieldsSchema } from '../../proxy/mcp/mcp-schema.ts';

// The `spec` of each custom resource, derived from the state file's entry schemas
// (DESIGN.md §4): an entry minus its id (the resource's metadata.name is the id) and with
// credentials replaced by Secret references. These schemas are the single source of the
// CRDs (operator/crds/generate-crds.ts) and of the renderer's validation.

export const API_GROUP = 'aigateway.dev';
export const API_VERSION = 'v1alpha1';
export const GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;

/** A key of a Secret in the operator's namespace. */
export const SecretKeyRefSchema = z
  .strictObject({
    name: z.string().min(1).max(253).describe('Name of a Secret in the same namespace.'),
    key: z.string().min(1).max(253).describe('Key inside the Secret.'),
  })
  .describe('A key of a Secret in the same namespace.');

export type SecretKeyRef = z.infer<typeof SecretKeyRefSchema>;

/**
 * Keys of the routing config that carry credentials. A GatewayConfig never holds them
 * (use a Provider with `apiKeySecretRef` and `provider: "@slug"`); the CRD omits them and
 * the renderer rejects a resource that has them at any depth.
 */
export const ROUTING_CREDENTIAL_KEYS: readonly string[] = Object.freeze([
  'api_key',
  'Authorization',
  'cloudB_service_account_json',
  'cloudC_access_key_id',
  'cloudC_secret_access_key',
  'cloudC_session_token',
  // The same under their real names (proxy/config/vendor-names.ts).
  'vertex_service_account_json',
  'aws_access_key_id',
  'aws_secret_access_key',
  'aws_session_token',
]);

/** GatewayConfig: the spec is the gateway's routing Config object itself. */
export const GatewayConfigSpecSchema = RoutingConfigSchema;

/**
 * Limits a GatewayConfig to workspaces ("team-a,team-b"). An annotation, because the spec is
 * the routing config itself and has no room for it; rendered into the saved config's `workspaces`.
 */
export const WORKSPACES_ANNOTATION = `${API_GROUP}/workspaces`;
export const MAX_ANNOTATED_WORKSPACES = 64;
const WORKSPACE_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/**
 * Parses the workspaces annotation: comma-separated names (letters, digits, ".", "_", "-";
 * at most 63 each), at least one, at most MAX_ANNOTATED_WORKSPACES; duplicates collapse.
 *
 * @example parseWorkspacesAnnotation('team-a, team-b') // { ok: true, workspaces: ['team-a', 'team-b'] }
 */
export function parseWorkspacesAnnotation(value: string): { ok: true; workspaces: string[] } | { ok: false; message: string } {
  const names = value.split(',').map((name) => name.trim());
  if (names.length > MAX_ANNOTATED_WORKSPACES) {
    return { ok: false, message: `${WORKSPACES_ANNOTATION} lists ${names.length} workspaces; at most ${MAX_ANNOTATED_WORKSPACES}.` };
  }
  const bad = names.find((name) => !WORKSPACE_NAME.test(name));
  if (bad !== undefined) {
    const shown = JSON.stringify(bad.length > 80 ? `${bad.slice(0, 80)}…` : bad);
    return { ok: false, message: `${WORKSPACES_ANNOTATION}: ${shown} is not a workspace name (comma-separated names of letters, digits, ".", "_", "-"; at most 63 each, none empty).` };
  }
  return { ok: true, workspaces: [...new Set(names)] };
}

/** Provider options that are credentials; they belong in a Secret, never in a CR. */
export const PROVIDER_OPTION_CREDENTIAL_KEYS: readonly string[] = Object.freeze([
  'secretAccessKey',
  'sessionToken',
  'serviceAccountJson',
  'apiKey',
]);

const providerShape = ProviderEntrySchema.shape;

export const ProviderSpecSchema = ProviderEntrySchema.omit({ slug: true, apiKey: true }).extend({
  provider: providerShape.provider.describe('Provider family, e.g. openai, anthropic, azure-openai, bedrock.'),
  virtualKey: providerShape.virtualKey.describe('Optional legacy alias, accepted in x-gateway-virtual-key and virtual_key.'),
  customHost: providerShape.customHost.describe('Base URL to call instead of the provider\'s own (a self-hosted or proxied endpoint; private addresses need the chart\'s state.egressAllow).'),
  organization: providerShape.organization.describe('Organization sent to the provider, where it has one.'),
  project: providerShape.project.describe('Project sent to the provider, where it has one.'),
  options: providerShape.options.describe('Provider-family options (API version, region, deployment...); shaped by each adapter.'),
  apiKeySecretRef: SecretKeyRefSchema.optional().describe('The provider credential (sent as its API key).'),
});

export const RateLimitPolicySpecSchema = RateLimitPolicySchema.omit({
  id: true,
  created_at: true,
  last_updated_at: true,
});

export const PromptSpecSchema = PromptEntrySchema.omit({ id: true });

/** A budget (docs/budgets.md); alert_threshold <= credit_limit is checked when rendered. */
export const UsageLimitPolicySpecSchema = UsageLimitPolicyObjectSchema.omit({
  id: true,
  created_at: true,
  last_updated_at: true,
});

/** A model's price (USD per million tokens), in front of the built-in price table. */
export const ModelPriceSpecSchema = ModelPriceEntrySchema.extend({
  model: ModelPriceEntrySchema.shape.model.describe('The model name as requests (or answers) name it.'),
  provider: ModelPriceEntrySchema.shape.provider.describe('Only for this provider family; any when absent.'),
  inputPerMillion: ModelPriceEntrySchema.shape.inputPerMillion.describe('USD per million prompt tokens.'),
  outputPerMillion: ModelPriceEntrySchema.shape.outputPerMillion.describe('USD per million completion tokens.'),
  cachedInputPerMillion: ModelPriceEntrySchema.shape.cachedInputPerMillion.describe('USD per million prompt tokens read from a prompt cache (default: the input price).'),
  cacheWritePerMillion: ModelPriceEntrySchema.shape.cacheWritePerMillion.describe('USD per million prompt tokens written to a prompt cache (default: the input price).'),
  audioInputPerMillion: ModelPriceEntrySchema.shape.audioInputPerMillion.describe('USD per million audio prompt tokens (realtime; default: the input price).'),
  cachedAudioInputPerMillion: ModelPriceEntrySchema.shape.cachedAudioInputPerMillion.describe('USD per million audio prompt tokens read from a cache (default: the cached input price).'),
  audioOutputPerMillion: ModelPriceEntrySchema.shape.audioOutputPerMillion.describe('USD per million audio completion tokens (default: the output price).'),
});

/** Guardrail: its checks and what happens on failure; open for the guardrail engine's keys. */
export const GuardrailSpecSchema = z.looseObject({
  checks: z.array(HookCheckSchema).min(1).describe('The checks, each an id (e.g. default.regexMatch) and its parameters.'),
  deny: z.boolean().optional().describe('Refuse the request when a check fails (otherwise only recorded).'),
  async: z.boolean().optional().describe('Run without holding the request (cannot deny).'),
  sequential: z.boolean().optional().describe('Run the checks one after another, not at once.'),
  fail_on_error: z.boolean().optional().describe('Treat a check that errors as failed (default: passed).'),
  on_fail: DenyingHookOutcomeSchema.optional().describe('What happens when a check fails (feedback, deny).'),
  on_success: DenyingHookOutcomeSchema.optional().describe('What happens when every check passes (feedback, deny).'),
});

const apiKeyShape = ApiKeyEntrySchema.shape;

/** GatewayAPIKey: exactly one of keySecretRef and keyHash (checked by the renderer). */
export const GatewayApiKeySpecSchema = z.strictObject({
  workspace: apiKeyShape.workspace.describe('Workspace of the key (rate limits and logs group by it); default "default".'),
  organisation: apiKeyShape.organisation.describe('Organisation of the key.'),
  scopes: apiKeyShape.scopes.describe('inference (the /v1 model APIs), admin (its own workspace\'s policies, prompts, logs and costs) and/or org_admin (every workspace\'s; includes admin); default [inference].'),
  keyHash: apiKeyShape.keyHash.describe('sha256:<64 hex digits> of the key.'),
  keySecretRef: SecretKeyRefSchema.optional().describe('The key itself, read from a Secret (hashed by the operator).'),
  defaultConfig: apiKeyShape.defaultConfig.describe('A GatewayConfig (its name) for requests that send only a model the catalog lacks.'),
  models: apiKeyShape.models.describe('The only models this key may select: Model names, "@<provider>/<model>" or "@<provider>/*"; default: all.'),
});

const modelShape = CatalogModelEntrySchema.shape;

/** Model: a public model name of the catalog. Exactly one of config and target (checked by the renderer). */
export const ModelSpecSchema = z.strictObject({
  name: modelShape.name.optional().describe('The public model name clients send as "model" (default: metadata.name; set it for names Kubernetes does not allow, e.g. "qwen2.5:7b").'),
  aliases: modelShape.aliases,
  config: modelShape.config.describe('A GatewayConfig (its name) that serves this model.'),
  target: modelShape.target.describe('A Provider ("@<name>") that serves this model.'),
  model: modelShape.model.describe('The model name sent to the provider (default: the public name).'),
  workspaces: modelShape.workspaces,
});

export const CONDITION_TYPES = ['Accepted', 'ResolvedRefs', 'Ready', 'Programmed', 'ThresholdReached', 'Exhausted'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export const ConditionSchema = z.strictObject({
  type: z.string().min(1).max(316).describe('Accepted (spec valid), ResolvedRefs (references found), Ready (rendered into the state), Programmed (GatewayConfig: every ready proxy replica serves this generation), ThresholdReached and Exhausted (UsageLimitPolicy: this period\'s spend).'),
  status: z.enum(['True', 'False', 'Unknown']).describe('True, False or Unknown.'),
  observedGeneration: z.int().min(0).optional().describe('The metadata.generation this condition was computed for.'),
  lastTransitionTime: z.string().describe('RFC 3339 time of the last status change.'),
  reason: z.string().min(1).max(1024).regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/).describe('CamelCase reason, e.g. SecretNotFound.'),
  message: z.string().max(32768).describe('Human-readable details.'),
});

export type Condition = z.infer<typeof ConditionSchema>;

export const ResourceStatusSchema = z.strictObject({
  observedGeneration: z.int().min(0).optional().describe('The metadata.generation the operator last processed.'),
  conditions: z.array(ConditionSchema).optional().describe('One condition per type.'),
});

export type ResourceStatus = z.infer<typeof ResourceStatusSchema>;

/** UsageLimitPolicy `status.spend`: the current period's spend, read by the operator from the shared budget store (docs/budgets.md). */
export const BudgetSpendSchema = z.strictObject({
  period: z.string().max(64).describe('The current period: 2026-11-26 (daily), w2026-11-23 (weekly, its Monday), m2026-11 (monthly) or all (never).'),
  unit: z.enum(['usd', 'tokens']).describe('usd (type cost) or tokens.'),
  limit: z.number().describe('credit_limit: the most each group may spend per period.'),
  alertThreshold: z.number().optional().describe('alert_threshold, when set.'),
  spent: z.number().describe('Settled spend this period, summed over every group.'),
  remaining: z.number().describe('What the tightest group has left: limit minus its settled spend and open reservations.'),
  groups: z.int().min(0).describe('Groups with spend or reservations this period (at most 1000 are read).'),
  updatedAt: z.string().describe('RFC 3339 time the operator read these values from the budget store.'),
});

export type BudgetSpend = z.infer<typeof BudgetSpendSchema>;

export const UsageLimitPolicyStatusSchema = ResourceStatusSchema.extend({
  spend: BudgetSpendSchema.optional().describe('This period\'s spend (needs the shared budget store, Redis; absent otherwise).'),
});

const mcpShape = McpServerFieldsSchema.shape;

/** A header of an MCPServer whose value comes from a Secret (labelled aigateway.dev/credential=mcp-server). */
export const McpHeaderFromSecretSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name').describe('The header name, e.g. Authorization.'),
  secretRef: SecretKeyRefSchema,
  prefix: z.string().max(64).optional().describe('Put before the Secret value, e.g. "Bearer ".'),
});

/** MCPServer: one upstream MCP server behind /mcp; its name is the tool prefix. Streamable HTTP or SSE only in a cluster. */
export const McpServerSpecSchema = McpServerFieldsSchema.omit({ name: true, command: true, args: true, env: true, cwd: true }).extend({
  transport: z.enum(['streamable-http', 'sse']).default('streamable-http').describe('streamable-http or sse (stdio servers run as their own Deployment behind an HTTP bridge).'),
  url: z.url({ protocol: /^https?$/ }).describe('The server endpoint, e.g. http://<service>.<namespace>.svc:<port>/mcp (private addresses need the chart\'s state.egressAllow).'),
  headers: mcpShape.headers.describe('Headers sent to this server only; never credentials (use headersFrom).'),
  headersFrom: z.array(McpHeaderFromSecretSchema).optional().describe('Headers whose values come from Secrets: sent to this server\'s host only.'),
  access: mcpShape.access.describe('Who may use this server and which tools: grants of GatewayAPIKey names (keys), workspaces and OAuth scopes; default: every key.'),
});

/** The six kinds, with the spec schema each one is generated from and validated by. */
export interface ResourceKind {
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortName: string;
  /** Key of the rendered state this kind feeds. */
  readonly stateKey: 'configs' | 'providers' | 'rateLimitPolicies' | 'prompts' | 'guardrails' | 'apiKeys' | 'models' | 'mcpServers' | 'usageLimitPolicies' | 'modelPrices';
  readonly spec: z.ZodType;
  /** The status schema when it has more than conditions. */
  readonly status?: z.ZodType;
  readonly description: string;
}

export const RESOURCE_KINDS = {
  GatewayConfig: {
    kind: 'GatewayConfig',
    plural: 'gatewayconfigs',
    singular: 'gatewayconfig',
    shortName: 'aigwc',
    stateKey: 'configs',
    spec: GatewayConfigSpecSchema,
    description: 'A saved routing config, used by its name in x-gateway-config.',
  },
  Provider: {
    kind: 'Provider',
    plural: 'providers',
    singular: 'provider',
    shortName: 'aigwp',
    stateKey: 'providers',
    spec: ProviderSpecSchema,
    description: 'A saved provider, used as "@<name>" or by its virtual key; credentials come from a Secret.',
  },
  RateLimitPolicy: {
    kind: 'RateLimitPolicy',
    plural: 'ratelimitpolicies',
    singular: 'ratelimitpolicy',
    shortName: 'aigwrl',
    stateKey: 'rateLimitPolicies',
    spec: RateLimitPolicySpecSchema,
    description: 'A rate-limit policy (requests or tokens per minute, hour or day).',
  },
  Prompt: {
    kind: 'Prompt',
    plural: 'prompts',
    singular: 'prompt',
    shortName: 'aigwpr',
    stateKey: 'prompts',
    spec: PromptSpecSchema,
    description: 'A stored prompt: Mustache message templates, model and default parameters.',
  },
  Guardrail: {
    kind: 'Guardrail',
    plural: 'guardrails',
    singular: 'guardrail',
    shortName: 'aigwg',
    stateKey: 'guardrails',
    spec: GuardrailSpecSchema,
    description: 'A saved guardrail, referenced by name in input_guardrails / output_guardrails.',
  },
  GatewayAPIKey: {
    kind: 'GatewayAPIKey',
    plural: 'gatewayapikeys',
    singular: 'gatewayapikey',
    shortName: 'aigwk',
    stateKey: 'apiKeys',
    spec: GatewayApiKeySpecSchema,
    description: 'A gateway API key: workspace, organisation, scopes; the key from a Secret or its sha256 hash.',
  },
  Model: {
    kind: 'Model',
    plural: 'models',
    singular: 'model',
    shortName: 'aigwm',
    stateKey: 'models',
    spec: ModelSpecSchema,
    description: 'A public model name: requests that send it as "model" alone route to its Provider or GatewayConfig; /v1/models lists it.',
  },
  MCPServer: {
    kind: 'MCPServer',
    plural: 'mcpservers',
    singular: 'mcpserver',
    shortName: 'aigwmcp',
    stateKey: 'mcpServers',
    spec: McpServerSpecSchema,
    description: 'An upstream MCP server behind /mcp: its URL, credentials from Secrets, tool include/exclude/rename, and which keys, workspaces and scopes may use which tools.',
  },
  UsageLimitPolicy: {
    kind: 'UsageLimitPolicy',
    plural: 'usagelimitpolicies',
    singular: 'usagelimitpolicy',
    shortName: 'aigwul',
    stateKey: 'usageLimitPolicies',
    spec: UsageLimitPolicySpecSchema,
    status: UsageLimitPolicyStatusSchema,
    description: 'A budget: USD (cost) or tokens per period (daily, weekly, monthly in a time zone, or never) and group, reserved before each request and settled to its real cost.',
  },
  ModelPrice: {
    kind: 'ModelPrice',
    plural: 'modelprices',
    singular: 'modelprice',
    shortName: 'aigwmp',
    stateKey: 'modelPrices',
    spec: ModelPriceSpecSchema,
    description: 'A model price (USD per million tokens) in front of the built-in price table: private models, negotiated rates.',
  },
} as const satisfies Record<string, ResourceKind>;

export type KindName = keyof typeof RESOURCE_KINDS;
export const KIND_NAMES = Object.keys(RESOURCE_KINDS) as KindName[];
