import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { conditionWorkspace } from '../ratelimit/policy-matching.ts';
import { periodOf } from './budget-period.ts';
import { counterKey, formatAmount, fromUnits, type BudgetEnforcer } from './budget-enforcer.ts';
import { usageLimitsOf, type BudgetRuntime } from './budget-admission.ts';
import type { UsageLimitPolicy } from './usage-limit-schema.ts';

// GET /v1/analytics/budgets: each usage-limit policy's spend this period, by group (admin
// scope). Read from the budget store, so every replica answers the same with Redis.
// Workspaces are a tenancy boundary: a key without org_admin sees the policies of its own
// workspace (owned by it, or pinned to it by a workspace_id condition) only: a global
// policy's groups span workspaces.

const MAX_GROUPS = 1000;

export function registerBudgetAnalytics(app: FastifyInstance, runtime: BudgetRuntime): void {
  app.get('/v1/analytics/budgets', { config: { gatewayScope: 'admin' } }, async (request) => {
    const enforcer = runtime.budgets;
    const policies = usageLimitsOf(runtime, request.gateway).filter((policy) => visible(request, policy));
    const data = [];
    for (const policy of policies) data.push(await spendOf(enforcer, policy));
    return { object: 'analytics.budgets', data };
  });
}

function visible(request: FastifyRequest, policy: UsageLimitPolicy): boolean {
  const key = request.gateway.apiKey;
  if (key === undefined) throw new GatewayError('AIGW_ERR_MISSING_API_KEY', 'Missing gateway API key.', { param: 'x-gateway-api-key' });
  if (key.scopes.has('org_admin')) return true;
  // The policy's own workspace, or one its conditions pin it to: it only counts that workspace's requests.
  return (policy.workspace_id ?? conditionWorkspace(policy)?.value) === key.workspace;
}

async function spendOf(enforcer: BudgetEnforcer | undefined, policy: UsageLimitPolicy) {
  const period = periodOf(policy, Date.now());
  const prefix = counterKey(policy, period, '');
  let groups: Array<{ group: string; spent: number; reserved: number; remaining: number }> = [];
  let error: string | undefined;
  if (enforcer !== undefined) {
    try {
      const counters = await enforcer.store.scan(prefix, MAX_GROUPS);
      groups = counters.map((counter) => ({
        group: counter.key.slice(prefix.length),
        spent: fromUnits(policy, counter.spent),
        reserved: fromUnits(policy, Math.max(0, counter.used - counter.spent)),
        remaining: Number(formatAmount(policy, Math.max(0, toLimit(policy) - counter.used))),
      }));
    } catch (cause) {
      error = (cause as Error).message.slice(0, 200);
    }
  }
  return {
    policy_id: policy.id,
    name: policy.name,
    type: policy.type,
    status: policy.status,
    credit_limit: policy.credit_limit,
    alert_threshold: policy.alert_threshold,
    periodic_reset: policy.periodic_reset,
    time_zone: policy.time_zone,
    period,
    spent: groups.reduce((sum, group) => sum + group.spent, 0),
    groups,
    ...(error === undefined ? {} : { error: 'budget store unavailable' }),
  };
}

function toLimit(policy: UsageLimitPolicy): number {
  return policy.type === 'cost' ? Math.floor(policy.credit_limit * 1_000_000 + 1e-6) : Math.floor(policy.credit_limit);
}
