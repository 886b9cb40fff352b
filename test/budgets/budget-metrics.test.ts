// Budget metrics stay bounded: labelled by policy id only (never the group: keys, metadata),
// and past 500 distinct policies the label reads "other" instead of growing without end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { BudgetEnforcer } from '../../proxy/budgets/budget-enforcer.ts';
import { MemoryBudgetStore } from '../../proxy/budgets/budget-store.ts';
import { UsageLimitPolicySchema } from '../../proxy/budgets/usage-limit-schema.ts';
import { createGatewayMetrics } from '../../proxy/observability/gateway-metrics.ts';
import { eventually } from '../helpers/eventually.ts';

test('budget metrics carry the policy id only, and at most 500 of them plus "other"', async () => {
  const metrics = createGatewayMetrics({ defaultMetrics: false });
  const enforcer = new BudgetEnforcer({ store: new MemoryBudgetStore(), metrics, logger: pino({ level: 'silent' }), now: Date.now });
  const facts = [{ workspace_id: 'default', api_key: 'key-id-secret-group', provider: 'openai', model: 'm', config: undefined, metadata: { user: 'alice@example.com' } }];
  for (let index = 0; index < 600; index++) {
    const policy = UsageLimitPolicySchema.parse({ id: `p${index}`, type: 'cost', credit_limit: 1, conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'api_key' }, { key: 'metadata.user' }] });
    const admitted = await enforcer.admit([policy], facts, () => ({ costUsd: 0.01, tokens: 10 }));
    assert.ok(admitted !== undefined);
    enforcer.settle(admitted.admission, { costUsd: 0.005, tokens: 5 });
  }
  const text = await eventually(async () => {
    const exposition = await metrics.registry.metrics();
    return /aigateway_budget_spent_usd\{policy="other"\}/.test(exposition) ? exposition : undefined;
  }, 'the settlements to be counted');
  for (const name of ['aigateway_budget_spent_usd', 'aigateway_budget_remaining_usd', 'aigateway_budget_decisions_total']) {
    const policies = new Set([...text.matchAll(new RegExp(`^${name}\\{policy="([^"]*)"`, 'gm'))].map((match) => match[1]));
    assert.ok(policies.size <= 501, `${name}: ${policies.size} label values`);
    assert.ok(policies.has('other'), name);
  }
  assert.doesNotMatch(text, /key-id-secret-group|alice@example\.com/, 'groups are never labels');
});
