// The UsageLimitPolicy and ModelPrice kinds: rendered into the state's usageLimitPolicies and
// modelPrices, invalid ones reported in status and left out, one price per model and
// provider (the older resource keeps it); the output loads in the proxy and prices with it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { priceTableOf } from '../../proxy/accounting/request-cost.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { resource, resources } from './resource-fixtures.ts';

function reasons(result: RenderResult, kind: string, name: string): Record<string, string> {
  const status = result.statuses.find((candidate) => candidate.kind === kind && candidate.name === name);
  assert.ok(status, `${kind}/${name} has a status`);
  return Object.fromEntries(status.conditions.map((condition) => [condition.type, `${condition.status}/${condition.reason}`]));
}

const BUDGET = { type: 'cost', credit_limit: 100, alert_threshold: 80, periodic_reset: 'monthly', time_zone: 'Europe/Paris', conditions: [{ key: 'workspace_id', value: 'team-a' }], group_by: [{ key: 'api_key' }] };

function render(): RenderResult {
  return renderGatewayState(
    resources([
      resource('UsageLimitPolicy', 'team-a-monthly', BUDGET, { created: '2025-01-01T00:00:00Z' }),
      resource('UsageLimitPolicy', 'threshold-too-high', { ...BUDGET, alert_threshold: 200 }, { created: '2025-01-01T00:00:01Z' }),
      resource('UsageLimitPolicy', 'bad-zone', { ...BUDGET, time_zone: 'Nowhere/Land' }, { created: '2025-01-01T00:00:02Z' }),
      resource('ModelPrice', 'private-llm', { model: 'private-llm', inputPerMillion: 2, outputPerMillion: 8 }, { created: '2025-01-01T00:00:03Z' }),
      resource('ModelPrice', 'private-llm-again', { model: 'private-llm', inputPerMillion: 1, outputPerMillion: 1 }, { created: '2025-01-01T00:00:04Z' }),
    ]),
  );
}

describe('UsageLimitPolicy and ModelPrice resources', () => {
  test('valid ones are rendered (id: the resource name), invalid ones reported and left out', () => {
    const result = render();
    assert.deepEqual(result.state.usageLimitPolicies?.map((policy) => policy.id), ['team-a-monthly']);
    assert.equal(result.state.usageLimitPolicies?.[0]?.['time_zone'], 'Europe/Paris');
    assert.equal(reasons(result, 'UsageLimitPolicy', 'team-a-monthly')['Ready'], 'True/Rendered');
    assert.match(reasons(result, 'UsageLimitPolicy', 'threshold-too-high')['Ready'] ?? '', /^False\//);
    assert.match(reasons(result, 'UsageLimitPolicy', 'bad-zone')['Ready'] ?? '', /^False\//);
    assert.deepEqual(result.state.modelPrices, [{ model: 'private-llm', inputPerMillion: 2, outputPerMillion: 8 }]);
    assert.equal(reasons(result, 'ModelPrice', 'private-llm-again')['Ready'], 'False/DuplicatePrice');
  });

  test('the rendered state loads in the proxy, which enforces and prices with it', () => {
    const texts = serializeRenderedState(render());
    const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : JSON.stringify(loaded.errors));
    const state = loaded.state;
    assert.equal(state.document.usageLimitPolicies[0]?.credit_limit, 100);
    assert.equal(priceTableOf(state).costUsd(undefined, 'private-llm', { prompt: 1_000_000, completion: 1_000_000 }), 10);
  });
});
