// The Model kind: public model names rendered into the state's `models:` list, each name
// once (the older resource keeps it), left out when its Provider or GatewayConfig is not
// rendered; a key's defaultConfig must name a rendered GatewayConfig. The output loads in
// the proxy and routes by model.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { selectRoute } from '../../proxy/routing/select-route.ts';
import { resource, resources } from './resource-fixtures.ts';

const HOST = 'https://models.example.com/v1';

function reasons(result: RenderResult, kind: string, name: string): Record<string, string> {
  const status = result.statuses.find((candidate) => candidate.kind === kind && candidate.name === name);
  assert.ok(status, `${kind}/${name} has a status`);
  return Object.fromEntries(status.conditions.map((condition) => [condition.type, `${condition.status}/${condition.reason}`]));
}

function render(): RenderResult {
  return renderGatewayState(
    resources([
      resource('Provider', 'local', { provider: 'openai', customHost: HOST }, { created: '2025-01-01T00:00:00Z' }),
      resource('GatewayConfig', 'prod', { provider: '@local', override_params: { model: 'big' } }, { created: '2025-01-01T00:00:01Z' }),
      resource('Model', 'llama', { name: 'llama3.2:8b', aliases: ['llama'], target: '@local', model: 'llama3.2' }, { created: '2025-01-01T00:00:02Z' }),
      resource('Model', 'fast', { config: 'prod' }, { created: '2025-01-01T00:00:03Z' }),
      // Younger, and claims a name already taken.
      resource('Model', 'llama-again', { name: 'llama', target: '@local' }, { created: '2025-01-01T00:00:04Z' }),
      resource('Model', 'orphan', { target: '@missing' }, { created: '2025-01-01T00:00:05Z' }),
      resource('Model', 'both', { target: '@local', config: 'prod' }, { created: '2025-01-01T00:00:06Z' }),
      resource('GatewayAPIKey', 'team', { keyHash: `sha256:${'a'.repeat(64)}`, defaultConfig: 'prod', models: ['fast', 'llama3.2:8b'] }),
      resource('GatewayAPIKey', 'stale', { keyHash: `sha256:${'b'.repeat(64)}`, defaultConfig: 'gone' }),
    ]),
  );
}

describe('renderGatewayState: Model', () => {
  test('Models render by name (spec.name for names Kubernetes does not allow); conflicts and missing references are reported', () => {
    const result = render();
    assert.deepEqual(result.state.models, [
      { name: 'fast', config: 'prod' },
      { name: 'llama3.2:8b', aliases: ['llama'], target: '@local', model: 'llama3.2' },
    ]);
    assert.equal(reasons(result, 'Model', 'llama')['Ready'], 'True/Rendered');
    assert.deepEqual(reasons(result, 'Model', 'llama-again')['Accepted'], 'False/DuplicateModelName');
    assert.deepEqual(reasons(result, 'Model', 'orphan')['ResolvedRefs'], 'False/ProviderNotFound');
    assert.deepEqual(reasons(result, 'Model', 'orphan')['Ready'], 'False/ProviderNotFound');
    assert.deepEqual(reasons(result, 'Model', 'both')['Accepted'], 'False/InvalidSpec');
  });

  test("a key's defaultConfig must be a rendered GatewayConfig; the key serves without it until it is", () => {
    const result = render();
    const team = result.state.apiKeys.find((key) => key.id === 'team');
    assert.equal(team?.defaultConfig, 'prod');
    assert.deepEqual(team?.models, ['fast', 'llama3.2:8b']);
    const stale = result.state.apiKeys.find((key) => key.id === 'stale');
    assert.ok(stale !== undefined && stale.defaultConfig === undefined);
    assert.equal(reasons(result, 'GatewayAPIKey', 'stale')['ResolvedRefs'], 'False/ConfigNotFound');
  });

  test('the rendered state loads in the proxy and routes by model', () => {
    const texts = serializeRenderedState(render());
    const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('; '));
    const state = loaded.state;
    assert.deepEqual(
      state.catalog.models.map((model) => model.id),
      ['fast', 'llama3.2:8b', 'big'],
    );
    const key = [...state.apiKeysByDigest.values()].find((candidate) => candidate.id === 'team');
    const byAlias = selectRoute({}, state, { apiKey: key, model: 'llama' });
    assert.equal(byAlias.plan.settings.override_params?.['model'], 'llama3.2');
    assert.equal(selectRoute({}, state, { apiKey: key, model: 'fast' }).configId, 'prod');
  });
});

describe('a namespace without Models', () => {
  test('renders no models list (the document it always rendered)', () => {
    const result = renderGatewayState(resources([resource('Provider', 'local', { provider: 'openai', customHost: HOST })]));
    assert.equal(result.state.models, undefined);
  });
});
