import { createHash } from 'node:crypto';
import { compileRoutingPlan, type PlanNode } from './routing-plan.ts';
import type { RoutingConfig } from './routing-config-schema.ts';
import { parseRoutingConfig } from './routing-config-validation.ts';
import type { GuardrailCompiler } from './guardrail-compiler.ts';
import type { GuardrailEntry } from './guardrail-entry-schema.ts';
import type { PromptEntry } from '../prompts/prompt-schema.ts';
import { compileEgressPolicy, type EgressPolicy } from '../upstream/egress-policy.ts';
import type { CredentialsDocument, GatewayStateDocument, ProviderEntry } from './state-schema.ts';
import { PlanCompileError } from '../errors.ts';
import { formatIssue } from '../openai/zod-issues.ts';
import { buildModelCatalog, type ModelCatalog } from './model-catalog.ts';
import { formatProblem, planTargetProblems, providerEntryProblems, type ProviderReferences } from './state-validation.ts';

// The immutable runtime snapshot built from one state document. Requests capture the
// current snapshot on entry and use it to the end, so a reload never changes a request
// half-way. Everything a request needs to look up is precomputed here.

/** `admin` manages its own workspace; `org_admin` every workspace (a key with it has `admin` too). */
export type GatewayScope = 'inference' | 'admin' | 'org_admin';

export interface GatewayApiKey {
  readonly id: string;
  readonly workspace: string;
  readonly organisation: string | undefined;
  readonly scopes: ReadonlySet<GatewayScope>;
  /** Saved config for a request that names only a model the catalog lacks. */
  readonly defaultConfig: string | undefined;
  /** The only models this key may select; undefined: its workspace's list, else all. */
  readonly models: ReadonlySet<string> | undefined;
  /** sha256 of the key; the key itself is never kept. */
  readonly digest: Buffer;
}

export type SavedProvider = Readonly<ProviderEntry>;

export interface SavedConfig {
  readonly id: string;
  readonly config: RoutingConfig;
  /** Compiled once per snapshot: inheritance applied, conditions compiled. */
  readonly plan: PlanNode;
}

export interface GatewayState {
  /** Content hash of the sources this snapshot was built from (exported as a metric). */
  readonly hash: string;
  readonly apiKeysByDigest: ReadonlyMap<string, GatewayApiKey>;
  readonly providersBySlug: ReadonlyMap<string, SavedProvider>;
  readonly providersByVirtualKey: ReadonlyMap<string, SavedProvider>;
  readonly configs: ReadonlyMap<string, SavedConfig>;
  /** Saved configs that failed validation: id → issues. A loaded state has none (they fail the load); kept for the 400 wording. */
  readonly invalidConfigs: ReadonlyMap<string, readonly string[]>;
  readonly prompts: ReadonlyMap<string, PromptEntry>;
  /** Saved guardrails, referenced by string id in input_guardrails / output_guardrails. */
  readonly guardrails: ReadonlyMap<string, GuardrailEntry>;
  /** Where operator-configured hosts may point (compiled `egress.allow`). */
  readonly egress: EgressPolicy;
  /** Where hosts a request chose may point (compiled `egress.clientAllow`; never inherits `egress.allow`). */
  readonly clientEgress: EgressPolicy;
  /** Public model names, workspace defaults and who may use what (config/model-catalog.ts). */
  readonly catalog: ModelCatalog;
  readonly document: Readonly<GatewayStateDocument>;
  /** MCP servers' upstream headers from the credentials file (Secret), by server name. */
  readonly mcpCredentials?: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

export interface BuildResult {
  state: GatewayState | undefined;
  /** Problems that reject the whole document. */
  errors: string[];
  /** Problems that do not stop the snapshot from serving. */
  warnings: string[];
}

export function sha256Hex(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Builds the runtime snapshot; pure apart from hashing. `guardrailCompiler` checks saved
 * guardrails and configs' hooks (the composition root passes the engine's, built above this floor).
 */
export function buildGatewayState(
  document: GatewayStateDocument,
  credentials: CredentialsDocument | undefined,
  hash: string,
  guardrailCompiler: GuardrailCompiler,
): BuildResult {
  const errors: string[] = [];
  const warnings: string[] = [];

  const apiKeysByDigest = new Map<string, GatewayApiKey>();
  const seenKeyIds = new Set<string>();
  document.apiKeys.forEach((entry, index) => {
    if (seenKeyIds.has(entry.id)) errors.push(`apiKeys[${index}].id: duplicate id "${entry.id}"`);
    seenKeyIds.add(entry.id);
    const secret = credentials?.apiKeys[entry.id];
    const digestHex = digestOf(secret?.key ?? entry.key, secret?.keyHash ?? entry.keyHash);
    if (digestHex === undefined) {
      errors.push(`apiKeys[${index}]: no key or keyHash for "${entry.id}"`);
      return;
    }
    if (apiKeysByDigest.has(digestHex)) {
      errors.push(`apiKeys[${index}]: the same key is already used by "${apiKeysByDigest.get(digestHex)?.id}"`);
    }
    apiKeysByDigest.set(digestHex, {
      id: entry.id,
      workspace: entry.workspace,
      organisation: entry.organisation,
      scopes: new Set<GatewayScope>(entry.scopes.includes('org_admin') ? [...entry.scopes, 'admin'] : entry.scopes),
      defaultConfig: entry.defaultConfig,
      models: entry.models === undefined ? undefined : new Set(entry.models),
      digest: Buffer.from(digestHex, 'hex'),
    });
  });

  const providersBySlug = new Map<string, SavedProvider>();
  const providersByVirtualKey = new Map<string, SavedProvider>();
  document.providers.forEach((entry, index) => {
    if (providersBySlug.has(entry.slug)) errors.push(`providers[${index}].slug: duplicate slug "${entry.slug}"`);
    const apiKey = credentials?.providers[entry.slug]?.apiKey ?? entry.apiKey;
    const provider: SavedProvider = Object.freeze({ ...entry, apiKey: apiKey || undefined });
    providersBySlug.set(entry.slug, provider);
    if (entry.virtualKey !== undefined) {
      if (providersByVirtualKey.has(entry.virtualKey)) {
        errors.push(`providers[${index}].virtualKey: duplicate virtual key`);
      }
      providersByVirtualKey.set(entry.virtualKey, provider);
    }
  });

  const guardrails = new Map<string, GuardrailEntry>();
  document.guardrails.forEach((guardrail, index) => {
    if (guardrails.has(guardrail.id)) errors.push(`guardrails[${index}].id: duplicate id "${guardrail.id}"`);
    for (const issue of guardrailCompiler.entryIssues(guardrail)) errors.push(formatIssue({ path: ['guardrails', index, ...issue.path], message: issue.message }));
    guardrails.set(guardrail.id, guardrail);
  });
  const configs = new Map<string, SavedConfig>();
  const invalidConfigs = new Map<string, readonly string[]>();
  document.configs.forEach((entry, index) => {
    if (configs.has(entry.id) || invalidConfigs.has(entry.id)) {
      errors.push(`configs[${index}].id: duplicate id "${entry.id}"`);
      return;
    }
    const parsed = parseRoutingConfig(entry.config);
    const compiled = parsed.success ? compileSaved(parsed.config, guardrails, guardrailCompiler) : parsed.issues;
    if (parsed.success && !Array.isArray(compiled)) {
      configs.set(entry.id, { id: entry.id, config: parsed.config, plan: compiled });
    } else {
      // A bad value in one saved config fails the load: a reload keeps the last good state
      // instead of serving a config that answers 400 to everyone.
      const issues = Array.isArray(compiled) ? compiled : [];
      invalidConfigs.set(entry.id, issues);
      errors.push(...issues.map((issue) => savedConfigIssue(entry.id, issue)));
    }
  });
  errors.push(...referenceProblems(document, configs, providersBySlug, providersByVirtualKey));

  const prompts = new Map<string, PromptEntry>();
  document.prompts.forEach((prompt, index) => {
    if (prompts.has(prompt.id)) errors.push(`prompts[${index}].id: duplicate id "${prompt.id}"`);
    prompts.set(prompt.id, prompt);
  });
  const policyIds = new Set<string>();
  document.rateLimitPolicies.forEach((policy, index) => {
    if (policyIds.has(policy.id)) errors.push(`rateLimitPolicies[${index}].id: duplicate id "${policy.id}"`);
    policyIds.add(policy.id);
  });
  // Attached guardrails must name saved ones. A wrong name is reported here and fails closed
  // (400) for the requests it would cover (endpoints/guardrail-flow.ts), like an invalid config.
  const unknownGuardrails = (where: string, names: readonly string[] | undefined): void =>
    names?.forEach((name, index) => {
      if (!guardrails.has(name)) warnings.push(`${where}[${index}]: unknown guardrail "${name}"; the requests it covers will answer 400`);
    });
  document.providers.forEach((entry, index) => {
    unknownGuardrails(`providers[${index}].input_guardrails`, entry.input_guardrails);
    unknownGuardrails(`providers[${index}].output_guardrails`, entry.output_guardrails);
  });
  const guardrailPolicyIds = new Set<string>();
  (document.guardrailPolicies ?? []).forEach((policy, index) => {
    if (guardrailPolicyIds.has(policy.id)) errors.push(`guardrailPolicies[${index}].id: duplicate id "${policy.id}"`);
    guardrailPolicyIds.add(policy.id);
    unknownGuardrails(`guardrailPolicies[${index}].input_guardrails`, policy.input_guardrails);
    unknownGuardrails(`guardrailPolicies[${index}].output_guardrails`, policy.output_guardrails);
  });

  const catalog = buildModelCatalog(document, configs, providersBySlug, errors);
  if (errors.length > 0) return { state: undefined, errors, warnings };
  const state: GatewayState = {
    hash,
    apiKeysByDigest,
    providersBySlug,
    providersByVirtualKey,
    configs,
    invalidConfigs,
    prompts,
    guardrails,
    egress: compileEgressPolicy(document.egress.allow),
    clientEgress: compileEgressPolicy(document.egress.clientAllow, 'egress.clientAllow'),
    catalog,
    document,
    mcpCredentials: new Map(Object.entries(credentials?.mcpServers ?? {}).map(([name, entry]) => [name, entry.headers])),
  };
  return { state: Object.freeze(state), errors, warnings };
}

/** `configs.prod.retry.attempts: must be at most 5` from a routing-config issue (`retry.attempts: …`, `config: …`). */
export function savedConfigIssue(id: string, issue: string): string {
  return issue.startsWith('config: ') ? `configs.${id}: ${issue.slice('config: '.length)}` : `configs.${id}.${issue}`;
}

/** What would fail on every request: targets naming no saved provider, unknown providers, hosts egress denies. */
function referenceProblems(
  document: GatewayStateDocument,
  configs: ReadonlyMap<string, SavedConfig>,
  providersBySlug: ReadonlyMap<string, SavedProvider>,
  providersByVirtualKey: ReadonlyMap<string, SavedProvider>,
): string[] {
  const egress = compileEgressPolicy(document.egress.allow);
  const references: ProviderReferences = {
    slugs: new Set(providersBySlug.keys()),
    virtualKeys: new Set(providersByVirtualKey.keys()),
    unavailable: new Set(document.unavailableProviders),
  };
  const problems = [...providersBySlug.values()].flatMap((provider) => providerEntryProblems(provider, `providers.${provider.slug}`, egress));
  for (const saved of configs.values()) problems.push(...planTargetProblems(saved.plan, `configs.${saved.id}`, references, egress));
  return problems.map(formatProblem);
}

/** The compiled plan, or the issues only compilation finds (conditions, guardrail checks); the operator checks GatewayConfigs with it too. */
export function compileSaved(config: RoutingConfig, guardrails: ReadonlyMap<string, GuardrailEntry>, guardrailCompiler: GuardrailCompiler): PlanNode | string[] {
  let plan: PlanNode;
  try {
    plan = compileRoutingPlan(config, 'operator');
  } catch (error) {
    if (error instanceof PlanCompileError) return error.issues;
    throw error;
  }
  const issues: string[] = [];
  const visit = (node: PlanNode): void => {
    const found = guardrailCompiler.configIssues(node.settings, guardrails);
    issues.push(...found.map((issue) => (node.path === 'config' ? issue : `${node.path.slice('config.'.length)}.${issue}`)));
    node.children.forEach(visit);
  };
  visit(plan);
  return issues.length > 0 ? [...new Set(issues)] : plan;
}

function digestOf(key: string | undefined, keyHash: string | undefined): string | undefined {
  if (key !== undefined && key !== '') return sha256Hex(key);
  if (keyHash !== undefined && /^sha256:[0-9a-fA-F]{64}$/.test(keyHash)) return keyHash.slice(7).toLowerCase();
  return undefined;
}
