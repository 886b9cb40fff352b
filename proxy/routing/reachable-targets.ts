import type { GatewayState } from '../config/gateway-state.ts';
import type { PlanNode } from '../config/routing-plan.ts';

// What a request resolves to, before it is sent: every leaf of its plan it may reach, each
// with the provider and model it would call once inline configs, saved providers (`@slug`,
// virtual keys) and override_params.model are applied. Policies (rate limits, attached
// guardrails) are matched against these, not against the request's wording. Pure.

export interface ReachableTarget {
  /** The provider family the leaf calls (`openai`, `anthropic`…); undefined when it names none. */
  readonly provider: string | undefined;
  /** The saved provider's slug when the leaf names one (`@slug` or its virtual key). */
  readonly slug: string | undefined;
  /** override_params.model, else the body's model. */
  readonly model: string | undefined;
}

export interface ReachInput {
  readonly body: Record<string, unknown> | undefined;
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  readonly pathname: string;
}

/**
 * The targets a request may reach: fallback and loadbalance reach every child (any of
 * them may answer), conditional the branch its conditions pick (they are deterministic).
 */
export function reachableTargets(plan: PlanNode, state: GatewayState, input: ReachInput): ReachableTarget[] {
  const targets: ReachableTarget[] = [];
  const seen = new Set<string>();
  const visit = (node: PlanNode, depth: number): void => {
    if (depth > 32) return;
    if (node.mode === undefined) {
      const target = leafTarget(node, state, input.body);
      const key = `${target.provider}\u0000${target.slug}\u0000${target.model}`;
      if (!seen.has(key)) {
        seen.add(key);
        targets.push(target);
      }
      return;
    }
    if (node.mode === 'conditional') {
      const query = { metadata: input.metadata, params: input.body ?? {}, url: { pathname: input.pathname } };
      const matched = node.conditions.find((condition) => condition.test(query))?.child ?? node.defaultChild;
      if (matched !== undefined) visit(matched, depth + 1);
      return;
    }
    const children = node.mode === 'single' ? node.children.slice(0, 1) : node.children;
    for (const child of children) visit(child, depth + 1);
  };
  visit(plan, 0);
  return targets;
}

function leafTarget(node: PlanNode, state: GatewayState, body: Record<string, unknown> | undefined): ReachableTarget {
  const { provider, virtual_key: virtualKey, override_params: overrides } = node.settings;
  const saved =
    virtualKey !== undefined
      ? state.providersByVirtualKey.get(virtualKey)
      : provider?.startsWith('@') === true
        ? state.providersBySlug.get(provider.slice(1))
        : undefined;
  const override = overrides?.['model'];
  const requested = body?.['model'];
  return {
    provider: saved?.provider ?? (provider?.startsWith('@') === true ? undefined : provider),
    slug: saved?.slug,
    model: typeof override === 'string' ? override : typeof requested === 'string' ? requested : undefined,
  };
}
