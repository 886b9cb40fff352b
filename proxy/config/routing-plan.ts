import type { RoutingConfig, StrategyMode } from './routing-config-schema.ts';
import { compileQuery, type QueryPredicate } from './conditional-query.ts';
import { QueryCompileError, PlanCompileError } from '../errors.ts';

// A validated config tree compiled once into a plan: each node carries its effective
// settings (inheritance applied, DESIGN.md §2) and its compiled conditions, so the
// per-request walk only reads. Saved configs compile at load; inline configs per distinct
// header value (cached by the caller).

/**
 * Who wrote a config: the operator (saved configs from the state file or custom resources)
 * or the request (x-gateway-config JSON, provider headers). A request-written config may
 * name a host only for credentials it brings itself (routing/resolve-target.ts).
 */
export type ConfigOrigin = 'operator' | 'request';

export interface PlanNode {
  /** `config`, `config.targets[1]`, `config.targets[0].targets[2]` */
  readonly path: string;
  readonly origin: ConfigOrigin;
  readonly name: string | undefined;
  /** loadbalance weight (default 1). */
  readonly weight: number;
  /** This node's config with inherited settings applied (targets removed). */
  readonly settings: RoutingConfig;
  /** Present when the node routes over children. */
  readonly mode: StrategyMode | undefined;
  readonly children: readonly PlanNode[];
  /** Fallback status codes: the child's own, else the strategy's (undefined = any non-2xx). */
  readonly fallbackOn: ReadonlySet<number> | undefined;
  /** Conditional mode: compiled conditions in order, and the default child. */
  readonly conditions: ReadonlyArray<{ readonly test: QueryPredicate; readonly child: PlanNode }>;
  readonly defaultChild: PlanNode | undefined;
}


// Settings a child inherits unless it sets its own (override_params merges instead).
const INHERITED_KEYS = [
  'retry',
  'cache',
  'request_timeout',
  'custom_host',
  'forward_headers',
  'cb_config',
  'before_request_hooks',
  'after_request_hooks',
  'input_guardrails',
  'output_guardrails',
] as const satisfies ReadonlyArray<keyof RoutingConfig>;

/** Compiles a validated config; throws PlanCompileError for problems only compilation sees. */
export function compileRoutingPlan(config: RoutingConfig, origin: ConfigOrigin): PlanNode {
  const issues: string[] = [];
  const root = compileNode(config, undefined, 'config', undefined, origin, issues);
  if (issues.length > 0) throw new PlanCompileError(issues);
  return root;
}

/** The effective settings of a child under a parent (pure). */
export function inheritSettings(parent: RoutingConfig | undefined, child: RoutingConfig): RoutingConfig {
  const { targets: _targets, ...own } = child;
  if (parent === undefined) return own;
  const merged: RoutingConfig = { ...own };
  for (const key of INHERITED_KEYS) {
    if (merged[key] === undefined && parent[key] !== undefined) {
      (merged as Record<string, unknown>)[key] = parent[key];
    }
  }
  if (parent.override_params !== undefined || own.override_params !== undefined) {
    merged.override_params = { ...parent.override_params, ...own.override_params };
  }
  return merged;
}

function compileNode(
  config: RoutingConfig,
  parent: RoutingConfig | undefined,
  path: string,
  strategyFallbackOn: readonly number[] | undefined,
  origin: ConfigOrigin,
  issues: string[],
): PlanNode {
  const settings = inheritSettings(parent, config);
  const ownFallbackOn = config.on_status_codes ?? strategyFallbackOn;
  const targets = config.targets ?? [];
  const mode = config.strategy?.mode ?? (targets.length > 0 ? 'single' : undefined);
  const children = targets.map((target, index) =>
    compileNode(target, settings, `${path}.targets[${index}]`, config.strategy?.on_status_codes, origin, issues),
  );

  const conditions: Array<{ test: QueryPredicate; child: PlanNode }> = [];
  let defaultChild: PlanNode | undefined;
  if (mode === 'conditional') {
    const byName = new Map(children.filter((child) => child.name !== undefined).map((child) => [child.name, child]));
    (config.strategy?.conditions ?? []).forEach((condition, index) => {
      const where = `${issuePrefix(path)}strategy.conditions[${index}]`;
      const child = byName.get(condition.then);
      if (child === undefined) {
        issues.push(`${where}.then: no target named "${condition.then}"`);
        return;
      }
      try {
        conditions.push({ test: compileQuery(condition.query, `${where}.query`), child });
      } catch (error) {
        if (!(error instanceof QueryCompileError)) throw error;
        issues.push(error.message);
      }
    });
    const defaultName = config.strategy?.default;
    defaultChild = defaultName === undefined ? undefined : byName.get(defaultName);
    if (defaultName !== undefined && defaultChild === undefined) issues.push(`${issuePrefix(path)}strategy.default: no target named "${defaultName}"`);
  }

  return {
    path,
    origin,
    name: config.name,
    weight: config.weight ?? 1,
    settings,
    mode,
    children,
    fallbackOn: ownFallbackOn === undefined ? undefined : new Set(ownFallbackOn),
    conditions,
    defaultChild,
  };
}

/** Issue paths are relative to the config root, like the schema's (`targets[1].retry…`). */
function issuePrefix(path: string): string {
  return path === 'config' ? '' : `${path.slice('config.'.length)}.`;
}
