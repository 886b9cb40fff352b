// Rules of the Config object that relate several keys (spec "Validity" and
// "Rules", Strategy table, DESIGN §2 conditional routing). They run on the raw
// input next to the schema, not as a zod refinement, so a config with a type
// error still gets every rule checked: zod skips refinements once a nested
// check has aborted. Every access is therefore defensive.
import { STRATEGY_MODES } from './routing-config-schema.ts';
import type { RoutingConfigKey, StrategyMode } from './routing-config-schema.ts';

/** One problem found in a config: where (path inside the config) and what. */
export interface ConfigIssue {
  readonly path: ReadonlyArray<string | number>;
  readonly message: string;
}

/** The spec's 18 key sets; a config must contain all keys of at least one. */
export const CONFIG_KEY_SETS = [
  ['provider', 'api_key'],
  ['provider', 'custom_host'],
  ['virtual_key'],
  ['strategy', 'targets'],
  ['cache'],
  ['retry'],
  ['prompt_id'],
  ['forward_headers'],
  ['request_timeout'],
  ['provider', 'cloudC_access_key_id', 'cloudC_secret_access_key'],
  ['provider', 'cloudB_region', 'cloudB_service_account_json'],
  ['provider', 'cloudB_region', 'cloudB_project_id'],
  ['provider', 'cloudA_deployment_name', 'cloudA_deployment_type', 'cloudA_region', 'cloudA_api_version'],
  ['provider', 'cloudA_endpoint_name', 'cloudA_deployment_type'],
  ['after_request_hooks'],
  ['before_request_hooks'],
  ['input_guardrails'],
  ['output_guardrails'],
] as const satisfies ReadonlyArray<ReadonlyArray<RoutingConfigKey>>;

/**
 * What lets a plain provider name call its upstream: the credential halves of
 * key sets 1, 2 and 10–14, plus `Authorization` (a cloud provider parameter).
 */
const PROVIDER_CREDENTIAL_SETS: ReadonlyArray<ReadonlyArray<RoutingConfigKey>> = [
  ['api_key'],
  ['custom_host'],
  ['Authorization'],
  ...CONFIG_KEY_SETS.filter((set) => set[0] === 'provider' && set.length > 2).map((set) => set.slice(1)),
];

const KEY_SETS_MESSAGE = `must contain one of: ${CONFIG_KEY_SETS.map((set) => set.join(' + ')).join(', ')} (or provider as an @slug of a saved provider)`;

type RawNode = Readonly<Record<string, unknown>>;

interface NodeContext {
  readonly isTarget: boolean;
  /** An ancestor sets custom_host, which targets inherit (DESIGN §2). */
  readonly inheritsCustomHost: boolean;
}

/**
 * Checks the cross-key rules on a config tree that may be malformed; shape
 * errors are the schema's job and are skipped here. The caller bounds depth.
 *
 * @example
 * collectRoutingRuleIssues({ strategy: { mode: 'fallback' } })
 * // → [{ path: ['targets'], message: 'Required when strategy is used' }]
 */
export function collectRoutingRuleIssues(input: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  checkNode(input, [], { isTarget: false, inheritsCustomHost: false }, issues);
  return issues;
}

function checkNode(node: unknown, path: ReadonlyArray<string | number>, context: NodeContext, issues: ConfigIssue[]): void {
  if (!isPlainObject(node)) return;
  const has = (key: RoutingConfigKey): boolean => node[key] !== undefined;
  const hasCustomHost = has('custom_host') || context.inheritsCustomHost;
  const hasKey = (key: RoutingConfigKey): boolean => has(key) || (key === 'custom_host' && hasCustomHost);
  // A specific "Required …" issue makes the generic key-set issue redundant.
  let reportedMissingKey = false;

  if (has('strategy') && !has('targets')) {
    issues.push({ path: [...path, 'targets'], message: 'Required when strategy is used' });
    reportedMissingKey = true;
  }
  if (has('targets') && !has('strategy')) {
    issues.push({ path: [...path, 'strategy'], message: 'Required when targets are used' });
  }
  const strategy = node['strategy'];
  if (isPlainObject(strategy) && isStrategyMode(strategy['mode'])) {
    checkStrategy(strategy, strategy['mode'], node['targets'], path, issues);
  }

  const provider = node['provider'];
  if (typeof provider === 'string' && !provider.startsWith('@') && !PROVIDER_CREDENTIAL_SETS.some((set) => set.every(hasKey))) {
    issues.push({ path: [...path, 'api_key'], message: 'Required when provider is a plain provider name' });
    reportedMissingKey = true;
  }
  // Only the root may leave the provider to request headers (x-gateway-provider, …).
  if (context.isTarget && !has('strategy') && !has('provider') && !has('virtual_key')) {
    issues.push({ path: [...path, 'provider'], message: 'Required in a target without strategy or virtual_key' });
    reportedMissingKey = true;
  }
  if (!reportedMissingKey && !satisfiesKeySet(node, hasKey)) {
    issues.push({ path, message: KEY_SETS_MESSAGE });
  }

  const targets = node['targets'];
  if (!Array.isArray(targets)) return;
  const childContext: NodeContext = { isTarget: true, inheritsCustomHost: hasCustomHost };
  targets.forEach((target: unknown, index) => checkNode(target, [...path, 'targets', index], childContext, issues));
}

function satisfiesKeySet(node: RawNode, hasKey: (key: RoutingConfigKey) => boolean): boolean {
  if (CONFIG_KEY_SETS.some((set) => set.every(hasKey))) return true;
  // Our reading: a saved provider slug carries its own credentials, and a
  // provider with `Authorization` is the spec's "provider plus credentials".
  const provider = node['provider'];
  return typeof provider === 'string' && (provider.startsWith('@') || hasKey('Authorization'));
}

function checkStrategy(
  strategy: RawNode,
  mode: StrategyMode,
  targets: unknown,
  path: ReadonlyArray<string | number>,
  issues: ConfigIssue[],
): void {
  const strategyPath = [...path, 'strategy'];
  if (mode !== 'fallback' && strategy['on_status_codes'] !== undefined) {
    issues.push({ path: [...strategyPath, 'on_status_codes'], message: 'only allowed when strategy.mode is fallback' });
  }
  if (mode !== 'conditional') return;

  const conditions = strategy['conditions'];
  if (conditions === undefined) {
    issues.push({ path: [...strategyPath, 'conditions'], message: 'Required when strategy.mode is conditional' });
  }
  if (strategy['default'] === undefined) {
    issues.push({ path: [...strategyPath, 'default'], message: 'Required when strategy.mode is conditional' });
  }
  // Without a targets array the missing targets are reported instead.
  if (!Array.isArray(targets)) return;
  const names = targetNames(targets, path, issues);
  const checkName = (name: unknown, at: ReadonlyArray<string | number>): void => {
    if (typeof name !== 'string' || name === '' || names.has(name)) return;
    const known = names.size === 0 ? 'no target has a name' : `known: ${[...names].join(', ')}`;
    issues.push({ path: at, message: `must be the name of one of this config's targets (${known})` });
  };
  if (Array.isArray(conditions)) {
    conditions.forEach((condition: unknown, index) => {
      if (isPlainObject(condition)) checkName(condition['then'], [...strategyPath, 'conditions', index, 'then']);
    });
  }
  checkName(strategy['default'], [...strategyPath, 'default']);
}

/** Names of a conditional node's targets; a repeated name would make `then` ambiguous. */
function targetNames(targets: readonly unknown[], path: ReadonlyArray<string | number>, issues: ConfigIssue[]): Set<string> {
  const names = new Set<string>();
  targets.forEach((target, index) => {
    if (!isPlainObject(target)) return;
    const name = target['name'];
    if (typeof name !== 'string' || name === '') return;
    if (names.has(name)) {
      issues.push({ path: [...path, 'targets', index, 'name'], message: `duplicate target name "${name}" in a conditional strategy` });
    }
    names.add(name);
  });
  return names;
}

function isStrategyMode(value: unknown): value is StrategyMode {
  return typeof value === 'string' && (STRATEGY_MODES as readonly string[]).includes(value);
}

export function isPlainObject(value: unknown): value is RawNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
