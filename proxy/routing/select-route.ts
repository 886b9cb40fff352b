import type { IncomingHttpHeaders } from 'node:http';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import { formatConfigIssues, parseRoutingConfig } from '../config/routing-config-validation.ts';
import type { GatewayApiKey, GatewayState } from '../config/gateway-state.ts';
import { GatewayError, PlanCompileError } from '../errors.ts';
import { HEADER, headerValue } from '../gateway-headers.ts';
import { compileRoutingPlan, type PlanNode } from '../config/routing-plan.ts';

// Which plan serves a request — the spec's four ways of naming a provider:
//   3. x-gateway-config (inline JSON or a saved config id) — wins over the others;
//   2. x-gateway-virtual-key;
//   1. x-gateway-provider (name or @slug) + Authorization: Bearer;
//   4. x-gateway-custom-host + x-gateway-provider (+ Authorization).
// Ways 1, 2 and 4 become a one-leaf config, so every request runs the same routing code.
// A config that names no provider itself (only retry, cache, …) takes the provider from
// the headers of ways 1, 2 or 4.
// A request with none of these headers routes by its `model` alone: a name of the model
// catalog, `@slug/upstream-model`, or else the key's (or its workspace's) default config.
// What a key may use (workspaces on providers, configs and models; a key's allow-list of
// models) is checked here, and only when the state limits anything.

export interface RouteSelection {
  readonly plan: PlanNode;
  /** Id of the saved config, when one was named. */
  readonly configId: string | undefined;
}

/** Who asks, and the model the body names: routing by model and access checks need them. */
export interface RouteCaller {
  readonly apiKey: GatewayApiKey | undefined;
  readonly model: unknown;
}

const PROVIDER_KEYS = ['provider', 'virtual_key', 'strategy', 'targets'] as const;

// Clients resend the same inline config on every request: parse and compile it once.
const INLINE_CACHE_LIMIT = 512;
const inlineCache = new Map<string, RoutingConfig>();

/**
 * The plan for a request. Without `caller` (batches, files), only the headers route; with
 * it, a request without routing headers routes by model, and access is checked.
 */
export function selectRoute(headers: IncomingHttpHeaders, state: GatewayState, caller?: RouteCaller): RouteSelection {
  const configHeader = headerValue(headers[HEADER.config])?.trim();
  if (configHeader === undefined || configHeader === '') {
    const fromHeaders = providerFromHeaders(headers);
    if (fromHeaders === undefined) return caller === undefined ? throwMissingProvider() : selectByModel(state, caller);
    return checked({ plan: compileInline(fromHeaders), configId: undefined }, state, caller);
  }
  if (!configHeader.startsWith('{')) return checked(savedConfig(configHeader, state, caller?.apiKey), state, caller);
  const config = parseInline(configHeader);
  if (PROVIDER_KEYS.some((key) => config[key] !== undefined)) return checked({ plan: compileCached(configHeader, config), configId: undefined }, state, caller);
  const fromHeaders = providerFromHeaders(headers) ?? throwMissingProvider();
  return checked({ plan: compileInline({ ...fromHeaders, ...config }), configId: undefined }, state, caller);
}

/** The route for a request that names only a model (see the top of this file). */
function selectByModel(state: GatewayState, caller: RouteCaller): RouteSelection {
  const { catalog } = state;
  const key = caller.apiKey;
  const workspace = key === undefined ? undefined : catalog.workspaces.get(key.workspace);
  const allowed = key?.models ?? workspace?.models;
  const defaultConfig = key?.defaultConfig ?? workspace?.defaultConfig;
  const model = typeof caller.model === 'string' && caller.model !== '' ? caller.model : undefined;
  if (model === undefined) {
    if (defaultConfig !== undefined) return savedConfig(defaultConfig, state, undefined);
    return throwMissingProvider();
  }
  if (model.startsWith('@')) return providerModel(model, state, key, allowed);
  const entry = catalog.byName.get(model);
  if (entry !== undefined && usableBy(entry.workspaces, key)) {
    if (allowed !== undefined && !allowed.has(entry.id) && !allowed.has(model)) throw notAllowed(model, allowed);
    return { plan: entry.plan, configId: entry.configId };
  }
  if (defaultConfig !== undefined) {
    if (allowed !== undefined && !allowed.has(model)) throw notAllowed(model, allowed);
    return savedConfig(defaultConfig, state, undefined);
  }
  if (catalog.models.length === 0 && allowed === undefined) return throwMissingProvider();
  throw unknownModel(model);
}

// `@slug/upstream-model`: a saved provider and the model to ask it for, compiled once per snapshot.
const MODEL_PLAN_LIMIT = 512;
const providerModelPlans = new WeakMap<GatewayState, Map<string, PlanNode>>();

function providerModel(model: string, state: GatewayState, key: GatewayApiKey | undefined, allowed: ReadonlySet<string> | undefined): RouteSelection {
  const slash = model.indexOf('/');
  const slug = slash < 0 ? '' : model.slice(1, slash);
  const upstream = slash < 0 ? '' : model.slice(slash + 1);
  const provider = slug === '' ? undefined : state.providersBySlug.get(slug);
  if (provider === undefined || upstream === '' || !usableBy(provider.workspaces, key)) throw unknownModel(model);
  if (allowed !== undefined && !allowed.has(model) && !allowed.has(`@${slug}/*`)) throw notAllowed(model, allowed);
  let plans = providerModelPlans.get(state);
  if (plans === undefined) {
    plans = new Map();
    providerModelPlans.set(state, plans);
  }
  let plan = plans.get(model);
  if (plan === undefined) {
    plan = compileInline({ provider: `@${slug}`, override_params: { model: upstream } });
    if (plans.size < MODEL_PLAN_LIMIT) plans.set(model, plan);
  }
  return { plan, configId: undefined };
}

/**
 * A route the headers chose, checked against what the key may use: a key limited to a list
 * of models routes by model only; saved providers limited to workspaces are invisible to
 * the others (the same 404 as a provider that does not exist).
 */
function checked(selection: RouteSelection, state: GatewayState, caller: RouteCaller | undefined): RouteSelection {
  if (caller === undefined || !state.catalog.limited) return selection;
  const key = caller.apiKey;
  const allowed = key?.models ?? (key === undefined ? undefined : state.catalog.workspaces.get(key.workspace)?.models);
  if (allowed !== undefined) {
    throw new GatewayError(
      'AIGW_ERR_MODEL_NOT_ALLOWED',
      `This gateway API key may use only its allowed models (${[...allowed].join(', ')}): send one as "model", without ${HEADER.provider}, ${HEADER.virtualKey} or ${HEADER.config}.`,
      { param: 'model' },
    );
  }
  if (selection.plan.origin === 'request') checkProviderAccess(selection.plan, state, key);
  return selection;
}

function checkProviderAccess(node: PlanNode, state: GatewayState, key: GatewayApiKey | undefined): void {
  const { provider, virtual_key: virtualKey } = node.settings;
  const saved =
    virtualKey !== undefined
      ? (state.providersByVirtualKey.get(virtualKey) ?? state.providersBySlug.get(virtualKey))
      : provider?.startsWith('@') === true
        ? state.providersBySlug.get(provider.slice(1))
        : undefined;
  if (saved !== undefined && !usableBy(saved.workspaces, key)) {
    const name = virtualKey !== undefined ? `virtual key "${virtualKey}"` : `provider "${provider ?? ''}"`;
    throw new GatewayError('AIGW_ERR_UNKNOWN_PROVIDER', `No saved ${name}.`, { param: virtualKey !== undefined ? HEADER.virtualKey : HEADER.provider });
  }
  node.children.forEach((child) => checkProviderAccess(child, state, key));
  for (const condition of node.conditions) checkProviderAccess(condition.child, state, key);
  if (node.defaultChild !== undefined) checkProviderAccess(node.defaultChild, state, key);
}

/** True when a key of its workspace may use something limited to `workspaces`. */
export function usableBy(workspaces: ReadonlySet<string> | readonly string[] | undefined, key: GatewayApiKey | undefined): boolean {
  if (workspaces === undefined) return true;
  if (key === undefined) return false;
  return Array.isArray(workspaces) ? workspaces.includes(key.workspace) : (workspaces as ReadonlySet<string>).has(key.workspace);
}

/** The client's model name as errors quote it: bounded. */
function quoted(model: string): string {
  return model.length > 200 ? `${model.slice(0, 200)}…` : model;
}

function unknownModel(model: string): GatewayError {
  return new GatewayError('AIGW_ERR_UNKNOWN_MODEL', `The model "${quoted(model)}" does not exist or this gateway API key may not use it; GET /v1/models lists the models it can use.`, {
    param: 'model',
  });
}

function notAllowed(model: string, allowed: ReadonlySet<string>): GatewayError {
  return new GatewayError('AIGW_ERR_MODEL_NOT_ALLOWED', `This gateway API key may not use the model "${quoted(model)}"; it may use: ${[...allowed].join(', ')}.`, {
    param: 'model',
  });
}

// A saved config's selection is the same object on every request (it lives as long as its snapshot).
const savedSelections = new WeakMap<object, RouteSelection>();

function savedConfig(id: string, state: GatewayState, key: GatewayApiKey | undefined): RouteSelection {
  const saved = state.configs.get(id);
  const limitedTo = key === undefined ? undefined : state.catalog.configWorkspaces.get(id);
  if (saved !== undefined && usableBy(limitedTo, key)) {
    let selection = savedSelections.get(saved);
    if (selection === undefined) savedSelections.set(saved, (selection = Object.freeze({ plan: saved.plan, configId: saved.id })));
    return selection;
  }
  if (saved !== undefined) throw new GatewayError('AIGW_ERR_UNKNOWN_CONFIG', `No saved config with id "${id}".`, { param: HEADER.config });
  const issues = state.invalidConfigs.get(id);
  if (issues !== undefined) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Saved config "${id}" is invalid: ${formatConfigIssues([...issues])}`, {
      param: HEADER.config,
    });
  }
  throw new GatewayError('AIGW_ERR_UNKNOWN_CONFIG', `No saved config with id "${id}".`, { param: HEADER.config });
}

function parseInline(value: string): RoutingConfig {
  const cached = inlineCache.get(value);
  if (cached !== undefined) return cached;
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `${HEADER.config} is not valid JSON.`, { param: HEADER.config });
  }
  const parsed = parseRoutingConfig(raw);
  if (!parsed.success) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Invalid config in ${HEADER.config}: ${formatConfigIssues(parsed.issues)}`, {
      param: HEADER.config,
    });
  }
  return parsed.config;
}

const compiledCache = new Map<string, PlanNode>();

function compileCached(key: string, config: RoutingConfig): PlanNode {
  const cached = compiledCache.get(key);
  if (cached !== undefined) return cached;
  const plan = compileInline(config);
  if (compiledCache.size >= INLINE_CACHE_LIMIT) {
    const oldest = compiledCache.keys().next().value;
    if (oldest !== undefined) {
      compiledCache.delete(oldest);
      inlineCache.delete(oldest);
    }
  }
  compiledCache.set(key, plan);
  inlineCache.set(key, config);
  return plan;
}

function compileInline(config: RoutingConfig): PlanNode {
  try {
    return compileRoutingPlan(config, 'request');
  } catch (error) {
    if (!(error instanceof PlanCompileError)) throw error;
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Invalid config in ${HEADER.config}: ${formatConfigIssues(error.issues)}`, {
      param: HEADER.config,
    });
  }
}

function providerFromHeaders(headers: IncomingHttpHeaders): RoutingConfig | undefined {
  const virtualKey = headerValue(headers[HEADER.virtualKey]);
  if (virtualKey !== undefined && virtualKey !== '') {
    if (headerValue(headers[HEADER.customHost]) !== undefined) {
      throw new GatewayError(
        'AIGW_ERR_CREDENTIAL_HOST_CONFLICT',
        `${HEADER.customHost} cannot be used with ${HEADER.virtualKey}: a saved credential goes only to the host configured with it.`,
        { param: HEADER.customHost },
      );
    }
    return { virtual_key: virtualKey };
  }
  const provider = headerValue(headers[HEADER.provider]);
  if (provider === undefined || provider === '') {
    if (headerValue(headers[HEADER.customHost]) !== undefined) {
      throw new GatewayError('AIGW_ERR_MISSING_PROVIDER', `${HEADER.customHost} needs ${HEADER.provider} too.`, {
        param: HEADER.provider,
      });
    }
    return undefined;
  }
  const config: RoutingConfig = { provider };
  const token = bearerToken(headerValue(headers['authorization']));
  if (token !== undefined) config.api_key = token;
  const customHost = headerValue(headers[HEADER.customHost]);
  if (customHost !== undefined && customHost !== '') config.custom_host = customHost;
  return config;
}

function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
  return match?.[1];
}

function throwMissingProvider(): never {
  throw new GatewayError(
    'AIGW_ERR_MISSING_PROVIDER',
    `No provider identified: send a "model" from GET /v1/models, or ${HEADER.virtualKey}, or ${HEADER.provider} with Authorization, or ${HEADER.config}, or ${HEADER.customHost} with ${HEADER.provider}.`,
    { param: HEADER.virtualKey },
  );
}
