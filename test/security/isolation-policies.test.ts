// Finding 7 and the accounting point on policy conditions: a rate-limit policy is visible
// by id only within its workspace (unless the key has the org_admin scope), and a policy
// applies where its conditions say: an org_admin key may file one for any workspace (named
// by workspace_id or a workspace_id condition), any other key naming another workspace gets
// a 400 naming the field, and conditions that can never match are refused. (The admin
// scope alone is admin of its own workspace: test/security/tenancy-admin-scope.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const TEAM_A_INFERENCE = 'gw-team-a-inference-0123456789abcdef';
const TEAM_B_ADMIN = 'gw-team-b-admin-key-0123456789abcdef';
const OTHER_WS_INFERENCE = 'gw-other-ws-inference-0123456789abcd';
const ORG_ADMIN = 'gw-org-admin-key-0123456789abcdefgh';
const POLICY = { group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 1 };

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  const state = baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-mock-provider-key', customHost: mock.url }] });
  (state['apiKeys'] as unknown[]).push(
    { id: 'team-a-inference', key: TEAM_A_INFERENCE, workspace: 'team-a', scopes: ['inference'] },
    { id: 'team-b-admin', key: TEAM_B_ADMIN, workspace: 'team-b', scopes: ['inference', 'admin'] },
    { id: 'other-ws-inference', key: OTHER_WS_INFERENCE, workspace: 'other-ws', scopes: ['inference'] },
    { id: 'org-admin', key: ORG_ADMIN, workspace: 'default', scopes: ['org_admin'] },
  );
  harness = await startHarness({ state });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function call(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

const param = (json: Record<string, unknown>): unknown => (json['error'] as { param?: unknown } | undefined)?.param;

describe('GET /v1/policies/rate-limits/{id} is confined to the workspace', () => {
  test("another workspace's policy answers 404 to a key without admin, exactly like a missing id", async () => {
    const created = await call('POST', '/policies/rate-limits', TEAM_B_ADMIN, { ...POLICY, conditions: [{ key: 'workspace_id', value: 'team-b' }] });
    assert.equal(created.status, 200);
    const id = String(created.json['id']);
    const foreign = await call('GET', `/policies/rate-limits/${id}`, TEAM_A_INFERENCE);
    const missing = await call('GET', '/policies/rate-limits/00000000-0000-4000-8000-000000000000', TEAM_A_INFERENCE);
    assert.equal(foreign.status, 404);
    assert.equal(missing.status, 404);
    assert.equal((foreign.json['error'] as { code: string }).code, (missing.json['error'] as { code: string }).code);
    assert.ok(!JSON.stringify(foreign.json).includes('team-b'));
    // Its own workspace and the org_admin scope still see it; another workspace's admin does not.
    assert.equal((await call('GET', `/policies/rate-limits/${id}`, TEAM_B_ADMIN)).status, 200);
    assert.equal((await call('GET', `/policies/rate-limits/${id}`, ORG_ADMIN)).status, 200);
    assert.equal((await call('GET', `/policies/rate-limits/${id}`, TEST_GATEWAY_KEY)).status, 404);
  });
});

describe('policies apply where their conditions say', () => {
  test('an org_admin naming another workspace only in conditions files the policy there, and it is enforced there', async () => {
    const created = await call('POST', '/policies/rate-limits', ORG_ADMIN, { ...POLICY, name: 'other-ws one rpm', conditions: [{ key: 'workspace_id', value: 'other-ws' }] });
    assert.equal(created.status, 200);
    const fetched = await call('GET', `/policies/rate-limits/${String(created.json['id'])}`, ORG_ADMIN);
    assert.equal(fetched.json['workspace_id'], 'other-ws');
    const chat = async (key: string): Promise<number> => {
      const response = await fetch(`${harness.gateway.url}/chat/completions`, {
        method: 'POST',
        headers: { 'x-gateway-api-key': key, 'x-gateway-provider': '@mock', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await response.arrayBuffer();
      return response.status;
    };
    assert.equal(await chat(OTHER_WS_INFERENCE), 200);
    assert.equal(await chat(OTHER_WS_INFERENCE), 429, 'the second request of the minute is over the policy');
    assert.equal(await chat(TEAM_A_INFERENCE), 200, 'other workspaces are not limited by it');
  });

  test('a key without admin naming another workspace: 400 naming the field', async () => {
    const byField = await call('POST', '/policies/rate-limits', TEAM_A_INFERENCE, { ...POLICY, workspace_id: 'team-b', conditions: [{ key: 'api_key', value: '*' }] });
    assert.equal(byField.status, 400);
    assert.equal(param(byField.json), 'workspace_id');
    const byCondition = await call('POST', '/policies/rate-limits', TEAM_A_INFERENCE, { ...POLICY, conditions: [{ key: 'model', value: 'x' }, { key: 'workspace_id', value: 'team-b' }] });
    assert.equal(byCondition.status, 400);
    assert.equal(param(byCondition.json), 'conditions[1].value');
    // Its own workspace: the body is fine, the scope is not.
    assert.equal((await call('POST', '/policies/rate-limits', TEAM_A_INFERENCE, { ...POLICY, conditions: [{ key: 'workspace_id', value: 'team-a' }] })).status, 403);
  });

  test('conditions that can never match are refused with 400', async () => {
    const contradictory = await call('POST', '/policies/rate-limits', TEST_GATEWAY_KEY, {
      ...POLICY,
      conditions: [{ key: 'model', value: 'a' }, { key: 'model', value: 'b' }],
    });
    assert.equal(contradictory.status, 400);
    assert.equal(param(contradictory.json), 'conditions[1].value');
    const disagreeing = await call('POST', '/policies/rate-limits', TEST_GATEWAY_KEY, {
      ...POLICY,
      workspace_id: 'team-a',
      conditions: [{ key: 'workspace_id', value: 'team-b' }],
    });
    assert.equal(disagreeing.status, 400);
    assert.equal(param(disagreeing.json), 'workspace_id');
    // `*` and a literal for the same key can both hold.
    const compatible = await call('POST', '/policies/rate-limits', TEST_GATEWAY_KEY, { ...POLICY, conditions: [{ key: 'model', value: '*' }, { key: 'model', value: 'b' }] });
    assert.equal(compatible.status, 200);
  });
});
