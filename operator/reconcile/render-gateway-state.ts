import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { compileSaved } from '../../proxy/config/gateway-state.ts';
import { parseRoutingConfig } from '../../proxy/config/routing-config-validation.ts';
import { formatProblem, planTargetProblems, providerEntryProblems, type StateProblem } from '../../proxy/config/state-validation.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { GuardrailEntrySchema, type GuardrailEntry } from '../../proxy/guardrails/guardrail-schema.ts';
import { compileEgressPolicy } from '../../proxy/upstream/egress-policy.ts';
import type { ApiKeyEntrySchema, CatalogModelEntrySchema, ProviderEntrySchema } from '../../proxy/config/state-schema.ts';
import type { PromptEntrySchema } from '../../proxy/prompts/prompt-schema.ts';
import type { RateLimitPolicySchema } from '../../proxy/ratelimit/policy-schema.ts';
import { configReferences } from './config-references.ts';
import {
  GatewayApiKeySpecSchema,
  GuardrailSpecSchema,
  PromptSpecSchema,
  PROVIDER_OPTION_CREDENTIAL_KEYS,
  ProviderSpecSchema,
  ModelSpecSchema,
  McpServerSpecSchema,
  RateLimitPolicySpecSchema,
  UsageLimitPolicySpecSchema,
  ModelPriceSpecSchema,
  parseWorkspacesAnnotation,
  WORKSPACES_ANNOTATION,
  type KindName,
} from './resource-schemas.ts';
import type { CustomResource, DesiredCondition, GatewayResources, RenderedStatus, SecretResource } from './resource-types.ts';
import { readCredential } from './secret-access.ts';
import { MCP_SERVER_NAME } from '../../proxy/mcp/mcp-schema.ts';

// renderGatewayState: the custom resources of one namespace → the gateway state document
// (the ConfigMap), the credentials document (the Secret) and the status of every resource.
// Pure. A resource that is invalid or whose Secret is missing or not permitted (see
// secret-access.ts) is left out and reported in its status; it never breaks the rest, and
// the output always loads in the proxy.

export const LAST_UPDATED_ANNOTATION = 'aigateway.dev/last-updated-at';

export interface RenderedStateDocument {
  apiKeys: Array<z.input<typeof ApiKeyEntrySchema>>;
  providers: Array<z.input<typeof ProviderEntrySchema>>;
  configs: Array<{ id: string; config: unknown; workspaces?: string[] }>;
  prompts: Array<z.input<typeof PromptEntrySchema>>;
  guardrails: Array<{ id: string; [key: string]: unknown }>;
  rateLimitPolicies: Array<z.input<typeof RateLimitPolicySchema>>;
  /** Budgets (UsageLimitPolicy resources); absent when there are none. */
  usageLimitPolicies?: Array<Record<string, unknown> & { id: string }>;
  /** Model prices (ModelPrice resources); absent when there are none. */
  modelPrices?: Array<z.input<typeof ModelPriceSpecSchema>>;
  models?: Array<z.input<typeof CatalogModelEntrySchema>>;
  /** Providers configs name that are missing or not ready: those targets are skipped, the rest serve. */
  unavailableProviders?: string[];
  egress: { allow: string[]; clientAllow: string[] };
  /** Upstream MCP servers (MCPServer resources); absent when there are none. */
  mcpServers?: Array<Record<string, unknown> & { name: string }>;
}

export interface RenderedCredentials {
  providers: Record<string, { apiKey: string }>;
  apiKeys: Record<string, { key?: string; keyHash?: string }>;
  /** MCPServer headers from Secrets, by server name; absent when there are none. */
  mcpServers?: Record<string, { headers: Record<string, string> }>;
}

export interface RenderResult {
  state: RenderedStateDocument;
  credentials: RenderedCredentials;
  statuses: RenderedStatus[];
}

type Verdict = { ok: true } | { ok: false; reason: string; message: string };
const OK: Verdict = { ok: true };

const SLUG = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$/;
const MIN_KEY_LENGTH = 8;

/**
 * Renders the gateway state of one namespace.
 *
 * @example const { state, credentials, statuses } = renderGatewayState({ resources, secrets });
 */
export function renderGatewayState(input: GatewayResources): RenderResult {
  const secrets = new Map(input.secrets.map((secret) => [secret.metadata.name, secret]));
  const protectedSecrets = new Set(input.protectedSecrets ?? []);
  const state: RenderedStateDocument = {
    apiKeys: [],
    providers: [],
    configs: [],
    prompts: [],
    guardrails: [],
    rateLimitPolicies: [],
    egress: { allow: [...(input.egressAllow ?? [])], clientAllow: [...(input.egressClientAllow ?? [])] },
  };
  const credentials: RenderedCredentials = { providers: {}, apiKeys: {} };
  const statuses: RenderedStatus[] = [];
  const report = (kind: KindName, resource: CustomResource, accepted: Verdict, resolved: Verdict, rendered: boolean): void => {
    statuses.push(statusOf(kind, resource, accepted, resolved, rendered));
  };

  // Providers first: configs are checked against what was rendered.
  const virtualKeys = new Map<string, string>();
  // The checks the proxy runs on load (proxy/config/state-validation.ts), as conditions.
  const egress = compileEgressPolicy(state.egress.allow);
  for (const resource of byPrecedence(input.resources.Provider)) {
    const name = resource.metadata.name;
    const parsed = ProviderSpecSchema.safeParse(resource.spec);
    let accepted: Verdict = parsed.success ? OK : invalidSpec(parsed.error);
    if (accepted.ok && !SLUG.test(name)) accepted = fail('InvalidName', `"${name}" is not a provider slug (letters, digits, ".", "_", "-"; at most 63).`);
    const options = parsed.success ? (parsed.data.options ?? {}) : {};
    const inline = PROVIDER_OPTION_CREDENTIAL_KEYS.filter((key) => key in options);
    if (accepted.ok && inline.length > 0) accepted = fail('InlineCredentials', `options.${inline.join(', options.')} must not be inline; use apiKeySecretRef.`);
    const virtualKey = parsed.success ? parsed.data.virtualKey : undefined;
    const owner = virtualKey === undefined ? undefined : virtualKeys.get(virtualKey);
    if (accepted.ok && owner !== undefined) accepted = fail('DuplicateVirtualKey', `virtualKey "${virtualKey}" is already used by Provider "${owner}".`);
    const unusable = accepted.ok && parsed.success ? providerEntryProblems(parsed.data, 'spec', egress) : [];
    if (unusable.length > 0) accepted = fail('InvalidProvider', unusable.map(formatProblem).join('; '));
    const ref = parsed.success ? parsed.data.apiKeySecretRef : undefined;
    const secret = ref === undefined ? undefined : readCredential(secrets, ref, 'provider', protectedSecrets);
    const resolved: Verdict = secret === undefined || secret.ok ? OK : secret;
    const rendered = accepted.ok && resolved.ok && parsed.success;
    if (rendered) {
      const { apiKeySecretRef: _ref, ...entry } = parsed.data;
      state.providers.push({ slug: name, ...entry });
      if (secret?.ok === true) credentials.providers[name] = { apiKey: secret.value };
      if (virtualKey !== undefined) virtualKeys.set(virtualKey, name);
    }
    report('Provider', resource, accepted, resolved, rendered);
  }

  for (const resource of byPrecedence(input.resources.Prompt)) {
    const parsed = PromptSpecSchema.safeParse(resource.spec);
    if (parsed.success) state.prompts.push({ id: resource.metadata.name, ...parsed.data });
    report('Prompt', resource, parsed.success ? OK : invalidSpec(parsed.error), OK, parsed.success);
  }

  for (const resource of byPrecedence(input.resources.Guardrail)) {
    const parsed = GuardrailSpecSchema.safeParse(resource.spec);
    if (parsed.success) state.guardrails.push({ id: resource.metadata.name, ...parsed.data });
    report('Guardrail', resource, parsed.success ? OK : invalidSpec(parsed.error), OK, parsed.success);
  }

  for (const resource of byPrecedence(input.resources.RateLimitPolicy)) {
    const parsed = RateLimitPolicySpecSchema.safeParse(resource.spec);
    if (parsed.success) {
      const lastUpdated = resource.metadata.annotations?.[LAST_UPDATED_ANNOTATION] ?? resource.metadata.creationTimestamp;
      state.rateLimitPolicies.push({
        id: resource.metadata.name,
        ...parsed.data,
        ...(resource.metadata.creationTimestamp === undefined ? {} : { created_at: resource.metadata.creationTimestamp }),
        ...(lastUpdated === undefined ? {} : { last_updated_at: lastUpdated }),
      });
    }
    report('RateLimitPolicy', resource, parsed.success ? OK : invalidSpec(parsed.error), OK, parsed.success);
  }

  renderBudgets(input.resources.UsageLimitPolicy ?? [], input.resources.ModelPrice ?? [], state, report);

  const keyOwners = new Map<string, string>();
  for (const resource of byPrecedence(input.resources.GatewayAPIKey)) {
    const name = resource.metadata.name;
    const parsed = GatewayApiKeySpecSchema.safeParse(resource.spec);
    let accepted: Verdict = parsed.success ? OK : invalidSpec(parsed.error);
    if (parsed.success && (parsed.data.keyHash === undefined) === (parsed.data.keySecretRef === undefined)) {
      accepted = fail('InvalidSpec', 'Exactly one of keySecretRef and keyHash is required.');
    }
    let resolved: Verdict = OK;
    let digest: string | undefined = parsed.success ? parsed.data.keyHash?.slice('sha256:'.length).toLowerCase() : undefined;
    if (accepted.ok && parsed.success && parsed.data.keySecretRef !== undefined) {
      const secret = readCredential(secrets, parsed.data.keySecretRef, 'gateway-key', protectedSecrets);
      if (!secret.ok) resolved = secret;
      else if (secret.value.length < MIN_KEY_LENGTH) resolved = fail('InvalidSecretValue', `The key in Secret "${parsed.data.keySecretRef.name}" is shorter than ${MIN_KEY_LENGTH} characters.`);
      else digest = createHash('sha256').update(secret.value).digest('hex');
    }
    const owner = digest === undefined ? undefined : keyOwners.get(digest);
    if (accepted.ok && resolved.ok && owner !== undefined) accepted = fail('DuplicateKey', `The same key is already used by GatewayAPIKey "${owner}".`);
    const rendered = accepted.ok && resolved.ok && parsed.success && digest !== undefined;
    if (rendered && parsed.success && digest !== undefined) {
      // Only the hash is rendered: neither the ConfigMap nor the Secret holds a gateway key.
      const { keySecretRef: _ref, keyHash: _hash, ...rest } = parsed.data;
      state.apiKeys.push({ id: name, keyHash: `sha256:${digest}`, ...rest });
      keyOwners.set(digest, name);
    }
    report('GatewayAPIKey', resource, accepted, resolved, rendered);
  }

  // Configs last: their references are checked against what was rendered above.
  const renderedProviders = new Set(state.providers.map((provider) => provider.slug));
  const renderedPrompts = new Set(state.prompts.map((prompt) => prompt.id));
  const renderedGuardrails = new Set(state.guardrails.map((guardrail) => guardrail.id));
  const guardrailEntries = new Map<string, GuardrailEntry>();
  for (const guardrail of state.guardrails) {
    const entry = GuardrailEntrySchema.safeParse(guardrail);
    if (entry.success) guardrailEntries.set(entry.data.id, entry.data);
  }
  const providerReferences = { slugs: renderedProviders, virtualKeys: new Set(virtualKeys.keys()), unavailable: new Set<string>() };
  const unavailableProviders = new Set<string>();
  for (const resource of byPrecedence(input.resources.GatewayConfig)) {
    const references = configReferences(resource.spec);
    const missingGuardrails = references.guardrailIds.filter((id) => !renderedGuardrails.has(id));
    let accepted: Verdict = OK;
    // With a path and a did-you-mean hint once the config compiles.
    let unresolved: StateProblem[] | undefined;
    if (references.inlineCredentials.length > 0) {
      accepted = fail('InlineCredentials', `${references.inlineCredentials.join(', ')} must not be inline: use a Provider with apiKeySecretRef and "@<provider>".`);
    } else {
      const parsed = parseRoutingConfig(resource.spec);
      const compiled = parsed.success ? compileSaved(parsed.config, guardrailEntries, BUILTIN_GUARDRAIL_COMPILER) : parsed.issues;
      if (Array.isArray(compiled)) {
        // A missing Guardrail is reported under ResolvedRefs; the config is left out meanwhile.
        if (!parsed.success || missingGuardrails.length === 0) accepted = fail('InvalidConfig', compiled.join('; '));
      } else {
        const problems = planTargetProblems(compiled, 'spec', providerReferences, egress);
        const invalid = problems.filter((problem) => problem.kind === 'invalid');
        if (invalid.length > 0) accepted = fail('InvalidConfig', invalid.map(formatProblem).join('; '));
        unresolved = problems.filter((problem) => problem.kind === 'unresolved');
      }
    }
    const missingSlugs = references.providerSlugs.filter((slug) => !renderedProviders.has(slug));
    const missingKeys = references.virtualKeys.filter((key) => !virtualKeys.has(key) && !renderedProviders.has(key));
    const missingProviders: string[] =
      unresolved?.map(formatProblem) ?? [...missingSlugs.map((slug) => `provider "@${slug}"`), ...missingKeys.map((key) => `virtual key "${key}"`)];
    const missing: Array<[string, string]> = [
      ...missingProviders.map((what): [string, string] => ['ProviderNotFound', what]),
      ...references.promptIds.filter((id) => !renderedPrompts.has(id)).map((id): [string, string] => ['PromptNotFound', `prompt "${id}"`]),
      ...missingGuardrails.map((id): [string, string] => ['GuardrailNotFound', `guardrail "${id}"`]),
    ];
    // The spec is the routing config; a limit to workspaces rides on an annotation.
    const annotation = resource.metadata.annotations?.[WORKSPACES_ANNOTATION];
    const limit = annotation === undefined ? undefined : parseWorkspacesAnnotation(annotation);
    if (accepted.ok && limit !== undefined && !limit.ok) accepted = fail('InvalidWorkspaces', limit.message);
    const rendered = accepted.ok && missingGuardrails.length === 0;
    const firstMissing = missing[0];
    const consequence = rendered
      ? 'The config is served; its targets naming a missing provider are skipped (a fallback moves on to the next) until it exists.'
      : 'The config is left out until they exist.';
    const resolved: Verdict =
      firstMissing === undefined ? OK : fail(firstMissing[0], `Not found or not ready: ${missing.map(([, what]) => what).join(', ')}. ${consequence}`);
    // Served even with unresolved providers: the other targets (e.g. a fallback) keep working.
    if (rendered) {
      state.configs.push({ id: resource.metadata.name, config: resource.spec, ...(limit?.ok === true ? { workspaces: limit.workspaces } : {}) });
      for (const name of [...missingSlugs, ...missingKeys]) unavailableProviders.add(name);
    }
    report('GatewayConfig', resource, accepted, resolved, rendered);
  }
  if (unavailableProviders.size > 0) state.unavailableProviders = [...unavailableProviders].sort(compareStrings);

  renderModels(input.resources.Model, state, statuses);
  renderMcpServers(input.resources.MCPServer ?? [], secrets, protectedSecrets, state, credentials, statuses);
  // A key's default config must exist; the key serves without it until it does.
  const renderedConfigs = new Set(state.configs.map((config) => config.id));
  for (const key of state.apiKeys) {
    if (key.defaultConfig === undefined || renderedConfigs.has(key.defaultConfig)) continue;
    const index = statuses.findIndex((status) => status.kind === 'GatewayAPIKey' && status.name === key.id);
    const resource = input.resources.GatewayAPIKey.find((candidate) => candidate.metadata.name === key.id);
    if (index >= 0 && resource !== undefined) {
      statuses[index] = statusOf('GatewayAPIKey', resource, OK, fail('ConfigNotFound', `GatewayConfig "${key.defaultConfig}" (defaultConfig) not found or not ready.`), true);
    }
    delete key.defaultConfig;
  }

  for (const list of [state.apiKeys, state.configs, state.prompts, state.guardrails, state.rateLimitPolicies]) {
    list.sort((a, b) => compareStrings(a.id, b.id));
  }
  state.providers.sort((a, b) => compareStrings(a.slug, b.slug));
  statuses.sort((a, b) => compareStrings(`${a.kind}/${a.name}`, `${b.kind}/${b.name}`));
  return { state, credentials, statuses };
}

/**
 * UsageLimitPolicy → usageLimitPolicies (id: the resource name); ModelPrice → modelPrices,
 * one price per model and provider (the older resource keeps it, like Models).
 */
function renderBudgets(
  policies: readonly CustomResource[],
  prices: readonly CustomResource[],
  state: RenderedStateDocument,
  report: (kind: KindName, resource: CustomResource, accepted: Verdict, resolved: Verdict, rendered: boolean) => void,
): void {
  for (const resource of byPrecedence(policies)) {
    const parsed = UsageLimitPolicySpecSchema.safeParse(resource.spec);
    let accepted: Verdict = parsed.success ? OK : invalidSpec(parsed.error);
    if (parsed.success && parsed.data.alert_threshold !== undefined && parsed.data.alert_threshold > parsed.data.credit_limit) {
      accepted = fail('InvalidSpec', 'spec.alert_threshold must not exceed spec.credit_limit.');
    }
    if (parsed.success && accepted.ok) {
      const lastUpdated = resource.metadata.annotations?.[LAST_UPDATED_ANNOTATION] ?? resource.metadata.creationTimestamp;
      (state.usageLimitPolicies ??= []).push({
        id: resource.metadata.name,
        ...parsed.data,
        ...(resource.metadata.creationTimestamp === undefined ? {} : { created_at: resource.metadata.creationTimestamp }),
        ...(lastUpdated === undefined ? {} : { last_updated_at: lastUpdated }),
      });
    }
    report('UsageLimitPolicy', resource, accepted, OK, parsed.success && accepted.ok);
  }
  state.usageLimitPolicies?.sort((a, b) => compareStrings(a.id, b.id));
  const priced = new Map<string, string>();
  for (const resource of byPrecedence(prices)) {
    const parsed = ModelPriceSpecSchema.safeParse(resource.spec);
    let accepted: Verdict = parsed.success ? OK : invalidSpec(parsed.error);
    const key = parsed.success ? `${parsed.data.provider ?? '*'}\u0000${parsed.data.model}` : '';
    const owner = priced.get(key);
    if (parsed.success && owner !== undefined) {
      accepted = fail('DuplicatePrice', `ModelPrice "${owner}" already prices ${parsed.data.model}${parsed.data.provider === undefined ? '' : ` at ${parsed.data.provider}`}.`);
    }
    if (parsed.success && accepted.ok) {
      priced.set(key, resource.metadata.name);
      (state.modelPrices ??= []).push(parsed.data);
    }
    report('ModelPrice', resource, accepted, OK, parsed.success && accepted.ok);
  }
  state.modelPrices?.sort((a, b) => compareStrings(`${a.model}\u0000${a.provider ?? ''}`, `${b.model}\u0000${b.provider ?? ''}`));
}

/**
 * Models: each name (and alias) once, the older resource keeping it; a Model whose Provider
 * or GatewayConfig was not rendered is left out (the proxy would refuse the reference).
 */
function renderModels(resources: readonly CustomResource[], state: RenderedStateDocument, statuses: RenderedStatus[]): void {
  const providers = new Set(state.providers.map((provider) => provider.slug));
  const configs = new Set(state.configs.map((config) => config.id));
  const owners = new Map<string, string>();
  const models: Array<z.input<typeof CatalogModelEntrySchema>> = [];
  for (const resource of byPrecedence(resources)) {
    const parsed = ModelSpecSchema.safeParse(resource.spec);
    let accepted: Verdict = parsed.success ? OK : invalidSpec(parsed.error);
    let resolved: Verdict = OK;
    if (parsed.success) {
      const spec = parsed.data;
      const name = spec.name ?? resource.metadata.name;
      if (accepted.ok && (spec.config === undefined) === (spec.target === undefined)) accepted = fail('InvalidSpec', 'Exactly one of config and target is required.');
      const taken = [name, ...(spec.aliases ?? [])].find((alias) => owners.has(alias));
      if (accepted.ok && taken !== undefined) accepted = fail('DuplicateModelName', `The model name "${taken}" is already used by Model "${owners.get(taken)}".`);
      if (spec.target !== undefined && !providers.has(spec.target.slice(1))) resolved = fail('ProviderNotFound', `Provider "${spec.target.slice(1)}" not found or not ready.`);
      if (spec.config !== undefined && !configs.has(spec.config)) resolved = fail('ConfigNotFound', `GatewayConfig "${spec.config}" not found or not ready.`);
      if (accepted.ok && resolved.ok) {
        const { name: _name, ...rest } = spec;
        models.push({ name, ...rest });
        for (const alias of [name, ...(spec.aliases ?? [])]) owners.set(alias, resource.metadata.name);
      }
    }
    statuses.push(statusOf('Model', resource, accepted, resolved, accepted.ok && resolved.ok));
  }
  // Only when there are any: a namespace without Models renders the document it always did.
  if (models.length > 0) state.models = models.sort((a, b) => compareStrings(a.name, b.name));
}

/**
 * MCPServers: the name is the tool prefix (a DNS label); header credentials come from
 * Secrets labelled aigateway.dev/credential=mcp-server and go to the credentials document.
 */
function renderMcpServers(
  resources: readonly CustomResource[],
  secrets: ReadonlyMap<string, SecretResource>,
  protectedSecrets: ReadonlySet<string>,
  state: RenderedStateDocument,
  credentials: RenderedCredentials,
  statuses: RenderedStatus[],
): void {
  const servers: Array<Record<string, unknown> & { name: string }> = [];
  for (const resource of byPrecedence(resources)) {
    const name = resource.metadata.name;
    const raw = resource.spec as { transport?: unknown } | undefined;
    const parsed = McpServerSpecSchema.safeParse(resource.spec);
    let accepted: Verdict = parsed.success ? OK : invalidSpec(parsed.error);
    if (raw?.transport === 'stdio') accepted = fail('StdioNotSupported', 'stdio MCP servers are started by standalone gateways only; in a cluster run the server as its own Deployment behind a Streamable HTTP bridge and set url.');
    if (accepted.ok && !MCP_SERVER_NAME.test(name)) accepted = fail('InvalidName', `"${name}" is not a DNS label (lower-case letters, digits, "-"; at most 63): it is the tool prefix.`);
    let resolved: Verdict = OK;
    const headers: Record<string, string> = {};
    for (const header of parsed.success ? (parsed.data.headersFrom ?? []) : []) {
      const secret = readCredential(secrets, header.secretRef, 'mcp-server', protectedSecrets);
      if (!secret.ok) {
        resolved = secret;
        break;
      }
      headers[header.name] = `${header.prefix ?? ''}${secret.value}`;
    }
    const rendered = accepted.ok && resolved.ok && parsed.success;
    if (rendered && parsed.success) {
      const { headersFrom: _headersFrom, ...entry } = parsed.data;
      servers.push({ name, ...entry });
      if (Object.keys(headers).length > 0) (credentials.mcpServers ??= {})[name] = { headers };
    }
    statuses.push(statusOf('MCPServer', resource, accepted, resolved, rendered));
  }
  // Only when there are any: a namespace without MCPServers renders the document it always did.
  if (servers.length > 0) state.mcpServers = servers.sort((a, b) => compareStrings(a.name, b.name));
}

function statusOf(kind: KindName, resource: CustomResource, accepted: Verdict, resolved: Verdict, rendered: boolean): RenderedStatus {
  const conditions: DesiredCondition[] = [
    accepted.ok
      ? { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'The spec is valid.' }
      : { type: 'Accepted', status: 'False', reason: accepted.reason, message: accepted.message },
    resolved.ok
      ? { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'Every reference resolved.' }
      : { type: 'ResolvedRefs', status: 'False', reason: resolved.reason, message: resolved.message },
  ];
  const failing = !accepted.ok ? accepted : !resolved.ok ? resolved : undefined;
  conditions.push(
    failing === undefined
      ? { type: 'Ready', status: 'True', reason: 'Rendered', message: 'Part of the rendered gateway state.' }
      : {
          type: 'Ready',
          status: 'False',
          reason: failing.reason,
          message: rendered ? `Rendered with problems: ${failing.message}` : `Left out of the gateway state: ${failing.message}`,
        },
  );
  return { kind, name: resource.metadata.name, uid: resource.metadata.uid, generation: resource.metadata.generation ?? 0, conditions, rendered };
}

function fail(reason: string, message: string): Verdict {
  return { ok: false, reason, message };
}

function invalidSpec(error: z.ZodError): Verdict {
  const issues = error.issues.map((issue) => `${['spec', ...issue.path.map(String)].join('.')}: ${issue.message}`);
  return fail('InvalidSpec', issues.join('; '));
}

/** Oldest first (then by name): when two resources claim the same key, the older one keeps it. */
function byPrecedence(resources: readonly CustomResource[]): CustomResource[] {
  return [...resources].sort(
    (a, b) =>
      compareStrings(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? '') ||
      compareStrings(a.metadata.name, b.metadata.name),
  );
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
