import { compileRoutingPlan, type PlanNode } from './routing-plan.ts';
import { PlanCompileError } from '../errors.ts';
import type { RoutingConfig } from './routing-config-schema.ts';
import type { GatewayStateDocument, ProviderEntry } from './state-schema.ts';

// The model catalog: public model names a request may send as `model` alone, without any
// gateway header. Each name (or alias) maps to a compiled plan: a saved config, or a saved
// provider with the upstream model pinned. Saved configs that pin a model
// (override_params.model) add their models too, so every name /v1/models lists routes.
// Also here: the workspace defaults and who may use what (workspaces on providers, configs
// and models), compiled once per snapshot.

export interface CatalogModel {
  /** The public name (listed by /v1/models). */
  readonly id: string;
  /** The provider family that serves it (OpenAI's `owned_by`). */
  readonly ownedBy: string;
  readonly plan: PlanNode;
  /** The saved config it routes through, if any. */
  readonly configId: string | undefined;
  /** Only keys of these workspaces may use it; undefined: every workspace. */
  readonly workspaces: ReadonlySet<string> | undefined;
}

export interface WorkspaceDefaults {
  readonly defaultConfig: string | undefined;
  readonly models: ReadonlySet<string> | undefined;
}

export interface ModelCatalog {
  /** In listing order: the catalog's own entries, then models saved configs pin. */
  readonly models: readonly CatalogModel[];
  /** Every name and alias → its model. */
  readonly byName: ReadonlyMap<string, CatalogModel>;
  readonly workspaces: ReadonlyMap<string, WorkspaceDefaults>;
  /** Saved config id → the workspaces that may use it (configs limited to some). */
  readonly configWorkspaces: ReadonlyMap<string, ReadonlySet<string>>;
  /** Some key, workspace, provider, config or model is limited: routing checks access (off otherwise). */
  readonly limited: boolean;
}

interface SavedConfigLike {
  readonly id: string;
  readonly config: RoutingConfig;
  readonly plan: PlanNode;
}

/** Builds the catalog; problems that would fail every request using an entry go to `errors`. */
export function buildModelCatalog(
  document: GatewayStateDocument,
  configs: ReadonlyMap<string, SavedConfigLike>,
  providersBySlug: ReadonlyMap<string, Readonly<ProviderEntry>>,
  errors: string[],
): ModelCatalog {
  const models: CatalogModel[] = [];
  const byName = new Map<string, CatalogModel>();
  const claim = (name: string, model: CatalogModel, where: string): void => {
    const owner = byName.get(name);
    if (owner !== undefined) {
      errors.push(`${where}: the model name "${name}" is already used by "${owner.id}"`);
      return;
    }
    byName.set(name, model);
  };

  document.models.forEach((entry, index) => {
    const where = `models[${index}]`;
    const workspaces = entry.workspaces === undefined ? undefined : new Set(entry.workspaces);
    let plan: PlanNode | undefined;
    let ownedBy = 'gateway';
    if (entry.config !== undefined) {
      const saved = configs.get(entry.config);
      if (saved === undefined) {
        errors.push(`${where}.config: no saved config "${entry.config}"`);
        return;
      }
      plan = entry.model === undefined ? saved.plan : compileEntry({ ...saved.config, override_params: { ...saved.config.override_params, model: entry.model } }, where, errors);
      ownedBy = ownerOfPlan(saved.plan, providersBySlug);
    } else if (entry.target !== undefined) {
      const slug = entry.target.slice(1);
      const provider = providersBySlug.get(slug);
      if (provider === undefined) {
        errors.push(`${where}.target: no saved provider "${entry.target}"`);
        return;
      }
      plan = compileEntry({ provider: entry.target, override_params: { model: entry.model ?? entry.name } }, where, errors);
      ownedBy = provider.provider;
    }
    if (plan === undefined) return;
    const model: CatalogModel = { id: entry.name, ownedBy, plan, configId: entry.config, workspaces };
    const before = byName.size;
    claim(entry.name, model, `${where}.name`);
    for (const alias of entry.aliases ?? []) claim(alias, model, `${where}.aliases`);
    if (byName.size > before) models.push(model);
  });

  const configWorkspaces = new Map<string, ReadonlySet<string>>();
  for (const entry of document.configs) if (entry.workspaces !== undefined) configWorkspaces.set(entry.id, new Set(entry.workspaces));

  // Models saved configs pin, each routed through the first config that names it.
  for (const saved of configs.values()) {
    for (const { id, ownedBy } of pinnedModels(saved.plan, providersBySlug)) {
      if (byName.has(id)) continue;
      const model: CatalogModel = { id, ownedBy, plan: saved.plan, configId: saved.id, workspaces: configWorkspaces.get(saved.id) };
      byName.set(id, model);
      models.push(model);
    }
  }

  const workspaces = new Map<string, WorkspaceDefaults>();
  for (const entry of document.workspaces) {
    if (workspaces.has(entry.id)) errors.push(`workspaces: duplicate id "${entry.id}"`);
    workspaces.set(entry.id, { defaultConfig: entry.defaultConfig, models: entry.models === undefined ? undefined : new Set(entry.models) });
    if (entry.defaultConfig !== undefined && !configs.has(entry.defaultConfig)) errors.push(`workspaces.${entry.id}.defaultConfig: no saved config "${entry.defaultConfig}"`);
  }
  document.apiKeys.forEach((entry, index) => {
    if (entry.defaultConfig !== undefined && !configs.has(entry.defaultConfig)) errors.push(`apiKeys[${index}].defaultConfig: no saved config "${entry.defaultConfig}"`);
  });

  const limited =
    document.models.some((entry) => entry.workspaces !== undefined) ||
    document.configs.some((entry) => entry.workspaces !== undefined) ||
    document.providers.some((entry) => entry.workspaces !== undefined) ||
    document.workspaces.some((entry) => entry.models !== undefined) ||
    document.apiKeys.some((entry) => entry.models !== undefined);
  return { models, byName, workspaces, configWorkspaces, limited };
}

/** The models a plan pins (each target's override_params.model), with the family serving each. */
export function pinnedModels(plan: PlanNode, providersBySlug: ReadonlyMap<string, Readonly<ProviderEntry>>): Array<{ id: string; ownedBy: string }> {
  const found: Array<{ id: string; ownedBy: string }> = [];
  const seen = new Set<string>();
  const visit = (node: PlanNode): void => {
    if (node.mode !== undefined) {
      node.children.forEach(visit);
      for (const condition of node.conditions) visit(condition.child);
      if (node.defaultChild !== undefined) visit(node.defaultChild);
      return;
    }
    const model = node.settings.override_params?.['model'];
    if (typeof model !== 'string' || model === '' || seen.has(model)) return;
    seen.add(model);
    found.push({ id: model, ownedBy: ownerOfNode(node.settings, providersBySlug) });
  };
  visit(plan);
  return found;
}

function ownerOfPlan(plan: PlanNode, providersBySlug: ReadonlyMap<string, Readonly<ProviderEntry>>): string {
  let node = plan;
  while (node.mode !== undefined && node.children[0] !== undefined) node = node.children[0];
  return ownerOfNode(node.settings, providersBySlug);
}

function ownerOfNode(settings: RoutingConfig, providersBySlug: ReadonlyMap<string, Readonly<ProviderEntry>>): string {
  const { provider, virtual_key: virtualKey } = settings;
  if (virtualKey !== undefined) {
    for (const saved of providersBySlug.values()) if (saved.virtualKey === virtualKey || saved.slug === virtualKey) return saved.provider;
    return 'gateway';
  }
  if (provider?.startsWith('@')) return providersBySlug.get(provider.slice(1))?.provider ?? 'gateway';
  return provider ?? 'gateway';
}

function compileEntry(config: RoutingConfig, where: string, errors: string[]): PlanNode | undefined {
  try {
    return compileRoutingPlan(config, 'operator');
  } catch (error) {
    if (!(error instanceof PlanCompileError)) throw error;
    errors.push(...error.issues.map((issue) => `${where}: ${issue}`));
    return undefined;
  }
}
