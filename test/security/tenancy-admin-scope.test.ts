// Workspaces are a tenancy boundary for the admin APIs: a key with the `admin` scope is
// admin of its own workspace only — it reads its own workspace's request logs and costs,
// and sees, files and changes its own workspace's rate-limit policies. Another workspace's
// record or policy answers 404 like a missing one, a filter naming another workspace finds
// nothing, and a policy naming another workspace is refused, so one workspace cannot throttle
// another. Only the `org_admin` scope reads and acts across workspaces.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { requestLogRoutes } from '../../proxy/logs/request-log-routes.ts';
import { SqliteLogStore } from '../../proxy/logs/sqlite-log-store.ts';
import { FilePolicyStore } from '../../proxy/ratelimit/policy-store.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';

const A_ADMIN = 'gw-tenancy-a-admin-0123456789abcdefgh';
const B_ADMIN = 'gw-tenancy-b-admin-0123456789abcdefgh';
const B_INFERENCE = 'gw-tenancy-b-inference-0123456789abcd';
const ORG_ADMIN = 'gw-tenancy-org-admin-0123456789abcdef';
const ORGANISATION = '7b6c1f7e-0000-4000-8000-000000000001';
const NOW = Date.parse('2026-01-15T12:00:00Z');
const POLICY = { group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 1 };

let mock: MockOpenAI;
let harness: Harness;
let dataDir: string;
let logs: SqliteLogStore;
let globalPolicyId: string;

let sequence = 0;
function record(workspace: string | undefined, costUsd: number, extra: Partial<RequestRecord> = {}): RequestRecord {
  sequence++;
  return {
    id: `rec-tenancy-${workspace ?? 'none'}-${sequence}`,
    traceId: `trace-${sequence}`,
    startedAt: NOW - 60_000 + sequence,
    method: 'POST',
    route: '/v1/chat/completions',
    status: 200,
    latencyMs: 10,
    ttftMs: undefined,
    apiKeyId: workspace === undefined ? undefined : `key-${workspace}`,
    workspace,
    configId: undefined,
    targetPath: undefined,
    provider: 'openai',
    model: 'gpt-4o-mini',
    metadata: undefined,
    promptTokens: 10,
    completionTokens: 5,
    totalTokens: 15,
    costUsd,
    cacheStatus: undefined,
    retries: 0,
    guardrailVerdict: undefined,
    errorCode: undefined,
    ...extra,
  };
}

const TEAM_A_RECORDS = [record('team-a', 0.25), record('team-a', 0.25)];
const TEAM_B_RECORDS = [record('team-b', 2), record('team-b', 2, { metadata: { project: 'team-b-secret-project' } }), record('team-b', 2)];

before(async () => {
  mock = await startMockOpenAI();
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-tenancy-admin-'));
  logs = await SqliteLogStore.open({ path: join(dataDir, 'request-logs.sqlite') });
  await logs.insertMany([...TEAM_A_RECORDS, ...TEAM_B_RECORDS, record(undefined, 0, { status: 401, errorCode: 'AIGW_ERR_INVALID_API_KEY' })]);
  const policyStore = FilePolicyStore.inMemory();
  // A policy of no workspace (as an older gateway could file): every key sees it, only org_admin changes it.
  const global = await policyStore.create({ group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'model', value: 'no-such-model' }] });
  globalPolicyId = global.id;
  const state = baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-mock-provider-key', customHost: mock.url }] });
  (state['apiKeys'] as unknown[]).push(
    { id: 'a-admin', key: A_ADMIN, workspace: 'team-a', organisation: ORGANISATION, scopes: ['inference', 'admin'] },
    { id: 'b-admin', key: B_ADMIN, workspace: 'team-b', scopes: ['inference', 'admin'] },
    { id: 'b-inference', key: B_INFERENCE, workspace: 'team-b', scopes: ['inference'] },
    { id: 'org-admin', key: ORG_ADMIN, workspace: 'platform', scopes: ['org_admin'] },
  );
  harness = await startHarness({ state, policyStore, plugins: [requestLogRoutes(logs, { now: () => NOW })] });
});
after(async () => {
  await harness.close();
  await logs.close();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function call(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; text: string; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

const errorOf = (json: Record<string, unknown>) => json['error'] as { code: string; param: string | null };
const workspacesOf = (json: Record<string, unknown>) => new Set((json['data'] as Array<{ workspace: string | null }>).map((entry) => entry.workspace));
const summaryOf = (json: Record<string, unknown>) => json['total'] as { requests: number; cost: { usd: number } };

async function chat(key: string): Promise<number> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': key, 'x-gateway-provider': '@mock', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('request logs and costs are confined to the admin key’s workspace', () => {
  test('GET /v1/logs lists only its own workspace; a filter naming another workspace finds nothing', async () => {
    const own = await call('GET', '/logs?limit=100', A_ADMIN);
    assert.equal(own.status, 200);
    assert.deepEqual(workspacesOf(own.json), new Set(['team-a']));
    assert.equal((own.json['data'] as unknown[]).length, TEAM_A_RECORDS.length);
    for (const path of ['/logs?workspace=team-b', '/logs?workspace=team-b&limit=100', '/logs?api_key_id=key-team-b']) {
      const foreign = await call('GET', path, A_ADMIN);
      assert.equal(foreign.status, 200, path);
      assert.deepEqual(foreign.json['data'], [], path);
      assert.doesNotMatch(foreign.text, /team-b-secret-project/);
    }
  });

  test("GET /v1/logs/{id} of another workspace's record answers 404 exactly like a missing id", async () => {
    const foreign = await call('GET', `/logs/${TEAM_B_RECORDS[1]!.id}`, A_ADMIN);
    const missing = await call('GET', '/logs/rec-tenancy-never-stored', A_ADMIN);
    assert.equal(foreign.status, 404);
    assert.equal(missing.status, 404);
    assert.equal(errorOf(foreign.json).code, errorOf(missing.json).code);
    assert.doesNotMatch(foreign.text, /team-b-secret-project/);
    assert.equal((await call('GET', `/logs/${TEAM_A_RECORDS[0]!.id}`, A_ADMIN)).status, 200);
  });

  test("another workspace's record is no cursor: `after` answers 400 like an unknown id", async () => {
    const foreign = await call('GET', `/logs?after=${TEAM_B_RECORDS[0]!.id}`, A_ADMIN);
    const missing = await call('GET', '/logs?after=rec-tenancy-never-stored', A_ADMIN);
    assert.equal(foreign.status, 400);
    assert.equal(missing.status, 400);
    assert.equal(errorOf(foreign.json).param, 'after');
    assert.equal(errorOf(foreign.json).code, errorOf(missing.json).code);
    assert.equal((await call('GET', `/logs?after=${TEAM_A_RECORDS[1]!.id}`, A_ADMIN)).status, 200);
  });

  test('GET /v1/analytics/summary counts and costs only its own workspace', async () => {
    const own = await call('GET', '/analytics/summary?group_by=workspace', A_ADMIN);
    assert.equal(own.status, 200);
    assert.equal(summaryOf(own.json).requests, TEAM_A_RECORDS.length);
    assert.equal(summaryOf(own.json).cost.usd, 0.5);
    assert.deepEqual((own.json['data'] as Array<{ group: string }>).map((group) => group.group), ['team-a']);
    const foreign = await call('GET', '/analytics/summary?workspace=team-b', A_ADMIN);
    assert.equal(foreign.status, 200);
    assert.equal(summaryOf(foreign.json).requests, 0);
    assert.equal(summaryOf(foreign.json).cost.usd, 0);
  });

  test('an org_admin key reads every workspace (the scope includes admin)', async () => {
    const all = await call('GET', '/logs?limit=100', ORG_ADMIN);
    assert.equal(all.status, 200);
    assert.deepEqual(workspacesOf(all.json), new Set(['team-a', 'team-b', null]));
    assert.equal((await call('GET', `/logs/${TEAM_B_RECORDS[1]!.id}`, ORG_ADMIN)).status, 200);
    const summary = await call('GET', '/analytics/summary?group_by=workspace', ORG_ADMIN);
    assert.equal(summaryOf(summary.json).cost.usd, 6.5);
    const byWorkspace = await call('GET', '/analytics/summary?workspace=team-b', ORG_ADMIN);
    assert.equal(summaryOf(byWorkspace.json).requests, TEAM_B_RECORDS.length);
  });
});

describe('rate-limit policies are confined to the admin key’s workspace', () => {
  let teamBPolicy: string;

  before(async () => {
    const created = await call('POST', '/policies/rate-limits', B_ADMIN, { ...POLICY, name: 'team-b own', conditions: [{ key: 'model', value: 'team-b-only-model' }] });
    assert.equal(created.status, 200);
    teamBPolicy = String(created.json['id']);
  });

  test("a workspace admin cannot file a policy for another workspace, by workspace_id or by condition", async () => {
    const byField = await call('POST', '/policies/rate-limits', A_ADMIN, { ...POLICY, workspace_id: 'team-b', conditions: [{ key: 'api_key', value: '*' }] });
    assert.equal(byField.status, 400);
    assert.equal(errorOf(byField.json).param, 'workspace_id');
    const byCondition = await call('POST', '/policies/rate-limits', A_ADMIN, { ...POLICY, conditions: [{ key: 'workspace_id', value: 'team-b' }] });
    assert.equal(byCondition.status, 400);
    assert.equal(errorOf(byCondition.json).param, 'conditions[0].value');
    // Team B is not throttled: both requests pass a one-per-minute limit that was never filed.
    assert.equal(await chat(B_INFERENCE), 200);
    assert.equal(await chat(B_INFERENCE), 200);
  });

  test('a workspace admin may not name another organisation', async () => {
    const other = await call('POST', '/policies/rate-limits', A_ADMIN, {
      ...POLICY,
      organisation_id: '00000000-0000-4000-8000-000000000002',
      conditions: [{ key: 'model', value: 'x' }],
    });
    assert.equal(other.status, 400);
    assert.equal(errorOf(other.json).param, 'organisation_id');
    const own = await call('POST', '/policies/rate-limits', A_ADMIN, { ...POLICY, conditions: [{ key: 'model', value: 'x' }] });
    assert.equal(own.status, 200);
    const fetched = await call('GET', `/policies/rate-limits/${String(own.json['id'])}`, A_ADMIN);
    assert.equal(fetched.json['workspace_id'], 'team-a');
    assert.equal(fetched.json['organisation_id'], ORGANISATION);
  });

  test("another workspace's policy is invisible to a workspace admin: 404 by id, absent from lists", async () => {
    const foreign = await call('GET', `/policies/rate-limits/${teamBPolicy}`, A_ADMIN);
    const missing = await call('GET', '/policies/rate-limits/00000000-0000-4000-8000-000000000000', A_ADMIN);
    assert.equal(foreign.status, 404);
    assert.equal(errorOf(foreign.json).code, errorOf(missing.json).code);
    const listed = await call('GET', '/policies/rate-limits', A_ADMIN);
    assert.ok(!(listed.json['data'] as Array<{ id: string }>).some((policy) => policy.id === teamBPolicy));
    assert.equal((await call('GET', '/policies/rate-limits?workspace_id=team-b', A_ADMIN)).json['total'], 0);
  });

  test("a workspace admin cannot archive or change another workspace's policy (404), nor a global one (403)", async () => {
    const archive = await call('PATCH', `/policies/rate-limits/${teamBPolicy}`, A_ADMIN, { status: 'archived' });
    assert.equal(archive.status, 404);
    assert.equal((await call('GET', `/policies/rate-limits/${teamBPolicy}`, B_ADMIN)).json['status'], 'active');
    const global = await call('PATCH', `/policies/rate-limits/${globalPolicyId}`, A_ADMIN, { value: 1000 });
    assert.equal(global.status, 403);
    assert.equal((await call('GET', `/policies/rate-limits/${globalPolicyId}`, A_ADMIN)).json['value'], 1);
    // Its own workspace's admin may.
    assert.equal((await call('PATCH', `/policies/rate-limits/${teamBPolicy}`, B_ADMIN, { name: 'renamed' })).status, 200);
  });

  test('an org_admin key sees and changes every workspace’s policies and may file one for another workspace', async () => {
    assert.equal((await call('GET', `/policies/rate-limits/${teamBPolicy}`, ORG_ADMIN)).status, 200);
    assert.equal((await call('PATCH', `/policies/rate-limits/${globalPolicyId}`, ORG_ADMIN, { value: 5 })).status, 200);
    const listed = await call('GET', '/policies/rate-limits?workspace_id=team-b', ORG_ADMIN);
    assert.equal(listed.json['total'], 1);
    const filed = await call('POST', '/policies/rate-limits', ORG_ADMIN, { ...POLICY, conditions: [{ key: 'workspace_id', value: 'team-b' }] });
    assert.equal(filed.status, 200);
    assert.equal(await chat(B_INFERENCE), 200);
    assert.equal(await chat(B_INFERENCE), 429, 'the policy an org_admin filed for team B applies there');
  });
});
