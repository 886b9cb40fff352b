import { z } from 'zod';
import { SavedGuardrailSchema } from './guardrail-entry-schema.ts';
import { PromptEntrySchema } from '../prompts/prompt-schema.ts';
import { ConditionSchema, RateLimitPolicySchema } from '../ratelimit/policy-schema.ts';
import { UsageLimitPolicySchema } from '../budgets/usage-limit-schema.ts';
import { McpCredentialsSchema, McpServerEntrySchema, McpSettingsSchema } from '../mcp/mcp-schema.ts';

// The gateway state file: the one document the operator renders and the proxy serves.
// Its top-level lists map one-to-one onto the CRDs (DESIGN.md §1). Saved routing configs
// are validated one by one afterwards, so one bad config does not take the others down.

const SLUG = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$/;

/** Shortest plain gateway API key accepted; `openssl rand -base64 32` gives 44 characters. */
export const MIN_GATEWAY_KEY_LENGTH = 32;

// Markers of a key copied from an example and never replaced. A gateway that starts with
// one is open to anyone who read the same example.
const PLACEHOLDER_MARKER = /replace[-_. ]?me|change[-_. ]?me|placeholder|your[-_. ]?(?:api[-_. ]?)?key|<[^>]*>/i;
const PLACEHOLDER_MESSAGE = 'looks like a placeholder (replace-me, changeme, placeholder, your-api-key, <…>): set a real key';

/** True when a key is an obvious placeholder copied from an example. */
export function isPlaceholderKey(key: string): boolean {
  return PLACEHOLDER_MARKER.test(key);
}

const GatewayKeySchema = z
  .string()
  .min(MIN_GATEWAY_KEY_LENGTH, `must be at least ${MIN_GATEWAY_KEY_LENGTH} characters (e.g. \`openssl rand -base64 32\`), or use keyHash`)
  .refine((key) => !isPlaceholderKey(key), PLACEHOLDER_MESSAGE);
const ProviderKeySchema = z.string().refine((key) => !isPlaceholderKey(key), PLACEHOLDER_MESSAGE);

export const ApiKeyEntrySchema = z
  .strictObject({
    id: z.string().min(1),
    key: GatewayKeySchema.optional(),
    keyHash: z
      .string()
      .regex(/^sha256:[0-9a-fA-F]{64}$/, 'must look like sha256:<64 hex digits>')
      .optional(),
    workspace: z.string().min(1).default('default'),
    organisation: z.string().optional(),
    /** Saved config for a request that names only a model the catalog lacks (default: the workspace's). */
    defaultConfig: z.string().min(1).optional(),
    /** The only models this key may select (catalog names, `@slug/model`, `@slug/*`); default: the workspace's, else all. */
    models: z.array(z.string().min(1)).optional(),
    // admin: its own workspace's policies, logs and costs; org_admin: every workspace's (includes admin).
    scopes: z.array(z.enum(['inference', 'admin', 'org_admin'])).default(['inference']),
  })
  .refine((entry) => (entry.key === undefined) !== (entry.keyHash === undefined), {
    message: 'exactly one of key or keyHash is required',
  });

/** Names of saved guardrails (`guardrails[].id`) attached to a provider or a guardrail policy. */
const AttachedGuardrailsSchema = z.array(z.string().min(1)).optional();

export const ProviderEntrySchema = z.strictObject({
  slug: z.string().regex(SLUG, 'must be letters, digits, ".", "_" or "-" (at most 63)'),
  provider: z.string().min(1),
  virtualKey: z.string().min(1).optional(),
  apiKey: ProviderKeySchema.optional(),
  customHost: z.url({ protocol: /^https?$/ }).optional(),
  organization: z.string().optional(),
  project: z.string().optional(),
  // Provider-family options (api versions, regions, deployments…): shaped by each adapter.
  options: z.record(z.string(), z.unknown()).optional(),
  // Attached by the operator: they run whenever a request may reach this provider, however
  // it is named (docs/guardrails.md, "Guardrails attached to providers, keys and workspaces").
  input_guardrails: AttachedGuardrailsSchema.describe('Saved Guardrails run on the input of every request that may reach this provider, however it is named.'),
  output_guardrails: AttachedGuardrailsSchema.describe('Saved Guardrails run on the answer of every request that may reach this provider.'),
  forwardClientCredential: z
    .boolean()
    .optional()
    .describe("Send the client's own Authorization / x-api-key to this provider when it has no key of its own (default: never)."),
  workspaces: z.array(z.string().min(1)).min(1).optional().describe('Only keys of these workspaces may use this provider (default: every workspace).'),
});

/** Guardrails attached by conditions (a workspace, a key, a provider, a model…), like a rate-limit policy's. */
export const GuardrailPolicyEntrySchema = z.strictObject({
  id: z.string().min(1),
  conditions: z.array(ConditionSchema).min(1).describe('Requests the guardrails apply to: all conditions must match (workspace_id, api_key, provider, model, config, metadata.<key>).'),
  input_guardrails: AttachedGuardrailsSchema.describe('Saved Guardrails run on the input of matching requests.'),
  output_guardrails: AttachedGuardrailsSchema.describe('Saved Guardrails run on the answer of matching requests.'),
});

export const SavedConfigEntrySchema = z.strictObject({
  id: z.string().min(1),
  // Validated separately with the routing config schema (see gateway-state.ts).
  config: z.unknown(),
  /** Only keys of these workspaces may use this config (default: every workspace). */
  workspaces: z.array(z.string().min(1)).min(1).optional(),
});

const MODEL_NAME = z.string().min(1).max(256).regex(/^[^@\s][^\s]*$/, 'must not start with "@" or hold spaces');

/**
 * A public model name in the catalog: a request that sends only `model` routes by it. It
 * maps to a saved config, or to a saved provider (`target: "@slug"`) and its upstream model.
 */
export const CatalogModelEntrySchema = z
  .strictObject({
    name: MODEL_NAME.describe('The public model name clients send as "model" (and /v1/models lists).'),
    aliases: z.array(MODEL_NAME).optional().describe('More names for the same model (e.g. dated or Anthropic-style names).'),
    config: z.string().min(1).optional().describe('A saved config (GatewayConfig) that serves this model.'),
    target: z.string().regex(/^@[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$/, 'must be "@<provider slug>"').optional().describe('A saved provider ("@<slug>") that serves this model.'),
    model: z.string().min(1).optional().describe('The model name sent upstream (default: name).'),
    workspaces: z.array(z.string().min(1)).min(1).optional().describe('Only keys of these workspaces may use this model (default: every workspace).'),
  })
  .refine((entry) => (entry.config === undefined) !== (entry.target === undefined), { message: 'exactly one of config or target is required' });

/** Defaults of the keys of one workspace (a key's own settings win). */
export const WorkspaceEntrySchema = z.strictObject({
  id: z.string().min(1),
  defaultConfig: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).optional(),
});

// Two lists: `allow` opens private ranges or hosts to what the operator configured (saved
// providers' custom hosts, webhooks, embeddings); `clientAllow` to hosts a request chooses
// (x-gateway-custom-host, an inline custom_host, an Azure resource from the request). Each
// starts from public addresses only; neither inherits the other.
export const EgressSchema = z.strictObject({
  allow: z.array(z.string().min(1)).default([]),
  clientAllow: z.array(z.string().min(1)).default([]),
});

export const CacheSettingsSchema = z.strictObject({
  /** Cosine a semantic neighbour needs (default 0.95). */
  semanticThreshold: z.number().min(0).max(1).optional(),
  /** The embeddings provider semantic caching uses; default: a built-in lexical vectorizer. */
  embeddings: z.strictObject({ provider: z.string().min(1), model: z.string().min(1) }).optional(),
});

/** USD per million tokens for a model the built-in price table lacks (private or self-hosted). */
export const ModelPriceEntrySchema = z.strictObject({
  model: z.string().min(1),
  provider: z.string().min(1).optional(),
  inputPerMillion: z.number().nonnegative(),
  outputPerMillion: z.number().nonnegative(),
  cachedInputPerMillion: z.number().nonnegative().optional(),
  cacheWritePerMillion: z.number().nonnegative().optional(),
  audioInputPerMillion: z.number().nonnegative().optional(),
  cachedAudioInputPerMillion: z.number().nonnegative().optional(),
  audioOutputPerMillion: z.number().nonnegative().optional(),
});

export const GatewayStateSchema = z.strictObject({
  apiKeys: z.array(ApiKeyEntrySchema).default([]),
  providers: z.array(ProviderEntrySchema).default([]),
  configs: z.array(SavedConfigEntrySchema).default([]),
  prompts: z.array(PromptEntrySchema).default([]),
  // Check ids and parameters are compiled at load by the guardrail engine passed in (gateway-state.ts).
  guardrails: z.array(SavedGuardrailSchema).default([]),
  rateLimitPolicies: z.array(RateLimitPolicySchema).default([]),
  // Budgets: usage-limit policies in USD or tokens (docs/budgets.md).
  usageLimitPolicies: z.array(UsageLimitPolicySchema).default([]),
  guardrailPolicies: z.array(GuardrailPolicyEntrySchema).default([]),
  egress: EgressSchema.default({ allow: [], clientAllow: [] }),
  cache: CacheSettingsSchema.default({}),
  modelPrices: z.array(ModelPriceEntrySchema).default([]),
  models: z.array(CatalogModelEntrySchema).default([]),
  workspaces: z.array(WorkspaceEntrySchema).default([]),
  // Saved-provider names (slugs or virtual keys) that configs may name although no provider
  // answers to them: the operator lists those whose Provider resource is missing or not
  // ready, so the config still serves its other targets. Anywhere else such a name is an error.
  unavailableProviders: z.array(z.string().min(1)).default([]),
  // Upstream MCP servers behind /mcp, and the MCP endpoint's settings (docs/mcp.md).
  mcpServers: z.array(McpServerEntrySchema).default([]),
  mcp: McpSettingsSchema.default({ maxMessageBytes: 4 * 1024 * 1024, maxUpstreamBytes: 16 * 1024 * 1024, maxBatch: 16, sessionTtlSeconds: 86_400 }),
});

export type GatewayStateDocument = z.infer<typeof GatewayStateSchema>;
export type ApiKeyEntry = z.infer<typeof ApiKeyEntrySchema>;
export type ProviderEntry = z.infer<typeof ProviderEntrySchema>;
export type SavedConfigEntry = z.infer<typeof SavedConfigEntrySchema>;
export type CatalogModelEntry = z.infer<typeof CatalogModelEntrySchema>;
export type WorkspaceEntry = z.infer<typeof WorkspaceEntrySchema>;
export type GuardrailPolicyEntry = z.infer<typeof GuardrailPolicyEntrySchema>;

/** Credentials kept apart from the state (the Secret in a cluster), merged by slug / id. */
export const CredentialsSchema = z.strictObject({
  providers: z.record(z.string(), z.strictObject({ apiKey: ProviderKeySchema })).default({}),
  apiKeys: z
    .record(
      z.string(),
      z.strictObject({ key: GatewayKeySchema.optional(), keyHash: z.string().optional() }),
    )
    .default({}),
  /** MCP servers' upstream headers (credentials), merged by server name. */
  mcpServers: McpCredentialsSchema.default({}),
});

export type CredentialsDocument = z.infer<typeof CredentialsSchema>;
