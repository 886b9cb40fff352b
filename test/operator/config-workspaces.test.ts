// A GatewayConfig limited to workspaces (issue 25): its spec is the routing config itself, so
// the limit is the aigateway.dev/workspaces annotation, rendered into the saved config's
// `workspaces`. An invalid annotation leaves the config out with Accepted=False. Through the
// gateway, a key of another workspace naming the config gets the same answer as for a config
// that does not exist.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import { MAX_ANNOTATED_WORKSPACES, WORKSPACES_ANNOTATION } from '../../operator/reconcile/resource-schemas.ts';
import type { CustomResource } from '../../operator/reconcile/resource-types.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { resource, resources } from './resource-fixtures.ts';

function annotated(name: string, spec: unknown, workspaces: string): CustomResource {
  const base = resource('GatewayConfig', name, spec);
  return { ...base, metadata: { ...base.metadata, annotations: { [WORKSPACES_ANNOTATION]: workspaces } } };
}

function conditions(result: RenderResult, name: string): Record<string, string> {
  const status = result.statuses.find((candidate) => candidate.kind === 'GatewayConfig' && candidate.name === name);
  assert.ok(status, `GatewayConfig/${name} has a status`);
  return Object.fromEntries(status.conditions.map((condition) => [condition.type, `${condition.status}/${condition.reason}`]));
}

function renderWith(host: string, annotation: string): RenderResult {
  return renderGatewayState(
    resources(
      [
        resource('Provider', 'openai-prod', { provider: 'openai', customHost: host }),
        annotated('team-a-config', { provider: '@openai-prod' }, annotation),
        resource('GatewayConfig', 'open-config', { provider: '@openai-prod' }),
      ],
      [],
      ['127.0.0.0/8'],
    ),
  );
}

describe('renderGatewayState: the workspaces annotation of a GatewayConfig', () => {
  test('renders into the saved config\'s workspaces (trimmed, duplicates collapsed); a config without it is open to all', () => {
    const result = renderWith('https://api.example.com/v1', ' team-a , team_b.2,team-a');
    assert.deepEqual(result.state.configs, [
      { id: 'open-config', config: { provider: '@openai-prod' } },
      { id: 'team-a-config', config: { provider: '@openai-prod' }, workspaces: ['team-a', 'team_b.2'] },
    ]);
    assert.equal(conditions(result, 'team-a-config')['Ready'], 'True/Rendered');
  });

  for (const [label, value] of [
    ['empty', ''],
    ['an empty name', 'team-a,,team-b'],
    ['a space inside a name', 'team a'],
    ['a slash', 'team-a/../b'],
    ['a name over 63 characters', 'x'.repeat(64)],
    ['too many names', Array.from({ length: MAX_ANNOTATED_WORKSPACES + 1 }, (_, index) => `w${index}`).join(',')],
  ] as const) {
    test(`an invalid annotation (${label}) is Accepted=False/InvalidWorkspaces and nothing is rendered`, () => {
      const result = renderWith('https://api.example.com/v1', value);
      assert.deepEqual(result.state.configs.map((config) => config.id), ['open-config']);
      const found = conditions(result, 'team-a-config');
      assert.equal(found['Accepted'], 'False/InvalidWorkspaces');
      assert.equal(found['Ready'], 'False/InvalidWorkspaces');
      const message = result.statuses.find((status) => status.name === 'team-a-config')?.conditions[0]?.message ?? '';
      assert.match(message, /aigateway\.dev\/workspaces/);
      assert.ok(message.length < 400, 'the message stays short for a long value');
    });
  }
});

describe('a rendered workspace-limited GatewayConfig in the gateway', () => {
  const TEAM_A_KEY = 'gw-team-a-key-0123456789-abcdefghi';
  const TEAM_B_KEY = 'gw-team-b-key-0123456789-abcdefghi';
  const UPSTREAM_KEY = 'sk-upstream-key-0123456789abcdef';
  let mock: MockOpenAI;
  let harness: Harness;

  before(async () => {
    mock = await startMockOpenAI({ apiKey: UPSTREAM_KEY });
    const { state } = renderWith(mock.url, 'team-a');
    harness = await startHarness({
      state: baseState({
        apiKeys: [
          { id: 'team-a', key: TEAM_A_KEY, workspace: 'team-a' },
          { id: 'team-b', key: TEAM_B_KEY, workspace: 'team-b' },
        ],
        providers: state.providers.map((provider) => ({ ...provider, apiKey: UPSTREAM_KEY })),
        configs: state.configs,
      }),
    });
  });

  after(async () => {
    await harness?.close();
    await mock?.close();
  });

  async function chat(key: string, config: string): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${harness.gateway.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-gateway-config': config },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: response.status, body: await response.json() };
  }

  test('its own workspace uses it; another workspace gets the answer for an unknown config', async () => {
    assert.equal((await chat(TEAM_A_KEY, 'team-a-config')).status, 200);
    assert.equal((await chat(TEAM_B_KEY, 'open-config')).status, 200);
    const requests = mock.requests.length;

    const limited = await chat(TEAM_B_KEY, 'team-a-config');
    const unknown = await chat(TEAM_B_KEY, 'no-such-config');
    assert.equal(limited.status, 404);
    assert.equal(limited.status, unknown.status);
    const normalise = (body: unknown) => JSON.stringify(body).replaceAll('team-a-config', 'ID').replaceAll('no-such-config', 'ID');
    assert.equal(normalise(limited.body), normalise(unknown.body));
    assert.equal((limited.body as { error: { code: string } }).error.code, 'AIGW_ERR_UNKNOWN_CONFIG');
    assert.equal(mock.requests.length, requests, 'nothing reached the provider');
  });
});
