// GET/POST /v1/policies/rate-limits (+ GET/PATCH by id): validation, scope, filters,
// pagination, archive, and persistence across a restart.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FilePolicyStore } from '../../proxy/ratelimit/policy-store.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const INFERENCE_ONLY_KEY = 'gw-inference-only-key-1-01234567';
const OTHER_WORKSPACE_ADMIN = 'gw-other-workspace-admin-0123456';
const VALID = {
  conditions: [{ key: 'workspace_id', value: 'default' }],
  group_by: [{ key: 'api_key' }],
  type: 'requests',
  unit: 'rpm',
  value: 100,
  name: 'per-key requests',
};

let dataDir: string;
let harness: Harness;

function state() {
  const s = baseState({
    rateLimitPolicies: [
      { id: 'from-state', type: 'tokens', unit: 'rpd', value: 1_000_000, conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'workspace_id' }] },
    ],
  });
  (s['apiKeys'] as unknown[]).push(
    { id: 'inference-only', key: INFERENCE_ONLY_KEY, scopes: ['inference'] },
    { id: 'other-admin', key: OTHER_WORKSPACE_ADMIN, workspace: 'team-b', scopes: ['admin'] },
  );
  return s;
}

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-policies-'));
  harness = await startHarness({ state: state(), policyStore: await FilePolicyStore.open(join(dataDir, 'policies.json')) });
});
after(async () => {
  await harness.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: unknown, key = TEST_GATEWAY_KEY): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

function errorParam(json: Record<string, unknown>): unknown {
  return (json['error'] as { param?: unknown } | undefined)?.param;
}

describe('POST /v1/policies/rate-limits validation', () => {
  const CASES: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
    ['conditions missing', { ...VALID, conditions: undefined }, 'conditions'],
    ['conditions empty', { ...VALID, conditions: [] }, 'conditions'],
    ['condition without value', { ...VALID, conditions: [{ key: 'api_key' }] }, 'conditions[0].value'],
    ['unknown condition key', { ...VALID, conditions: [{ key: 'colour', value: 'x' }] }, 'conditions[0].key'],
    ['group_by missing', { ...VALID, group_by: undefined }, 'group_by'],
    ['group_by empty', { ...VALID, group_by: [] }, 'group_by'],
    ['type invalid', { ...VALID, type: 'bytes' }, 'type'],
    ['type missing', { ...VALID, type: undefined }, 'type'],
    ['unit invalid', { ...VALID, unit: 'rps' }, 'unit'],
    ['value zero', { ...VALID, value: 0 }, 'value'],
    ['value negative', { ...VALID, value: -1 }, 'value'],
    ['value not a number', { ...VALID, value: '10' }, 'value'],
    ['name too long', { ...VALID, name: 'n'.repeat(256) }, 'name'],
    ['organisation_id not a UUID', { ...VALID, organisation_id: 'acme' }, 'organisation_id'],
  ];
  for (const [name, body, param] of CASES) {
    test(`400: ${name}`, async () => {
      const { status, json } = await call('POST', '/policies/rate-limits', JSON.parse(JSON.stringify(body)));
      assert.equal(status, 400);
      assert.equal(errorParam(json), param);
    });
  }

  test('name of exactly 255 characters is fine', async () => {
    assert.equal((await call('POST', '/policies/rate-limits', { ...VALID, name: 'n'.repeat(255), status: undefined })).status, 200);
  });

  test('creating needs the admin scope (403); listing does not', async () => {
    const denied = await call('POST', '/policies/rate-limits', VALID, INFERENCE_ONLY_KEY);
    assert.equal(denied.status, 403);
    assert.equal((await call('GET', '/policies/rate-limits', undefined, INFERENCE_ONLY_KEY)).status, 200);
    assert.equal((await call('GET', '/policies/rate-limits', undefined, 'wrong-key-0000')).status, 401);
  });
});

describe('create, list, filter, paginate, archive', () => {
  let createdId = '';

  test('create → {id (UUID), object}; workspace and organisation come from the key', async () => {
    const { status, json } = await call('POST', '/policies/rate-limits', { ...VALID, type: 'tokens', unit: 'rph', value: 5000 });
    assert.equal(status, 200);
    assert.match(String(json['id']), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(json['object'], 'rate_limit_policy');
    createdId = String(json['id']);
    const fetched = await call('GET', `/policies/rate-limits/${createdId}`);
    assert.equal(fetched.json['workspace_id'], 'default');
    assert.equal(fetched.json['status'], 'active');
    assert.match(String(fetched.json['created_at']), /^\d{4}-\d{2}-\d{2}T/);
  });

  test('list: {object: list, data, total}; state-file and API policies both listed; filters', async () => {
    const all = await call('GET', '/policies/rate-limits');
    assert.equal(all.json['object'], 'list');
    const ids = (all.json['data'] as Array<{ id: string }>).map((policy) => policy.id);
    assert.ok(ids.includes('from-state'));
    assert.ok(ids.includes(createdId));
    assert.equal(all.json['total'], ids.length);

    const tokens = await call('GET', '/policies/rate-limits?type=tokens&unit=rph');
    assert.deepEqual((tokens.json['data'] as Array<{ id: string }>).map((policy) => policy.id), [createdId]);
    const byWorkspace = await call('GET', '/policies/rate-limits?workspace_id=nobody');
    assert.equal(byWorkspace.json['total'], 0);
    const bad = await call('GET', '/policies/rate-limits?status=deleted');
    assert.equal(bad.status, 400);
    assert.equal(errorParam(bad.json), 'status');
    assert.equal((await call('GET', '/policies/rate-limits?page_size=-1')).status, 400);
  });

  test('pagination with page_size and current_page', async () => {
    const total = Number((await call('GET', '/policies/rate-limits')).json['total']);
    const first = await call('GET', '/policies/rate-limits?page_size=1&current_page=0');
    const second = await call('GET', '/policies/rate-limits?page_size=1&current_page=1');
    assert.equal((first.json['data'] as unknown[]).length, 1);
    assert.equal(first.json['total'], total);
    assert.notDeepEqual(first.json['data'], second.json['data']);
  });

  test('a key sees only its workspace unless it is an admin of another', async () => {
    const other = await call('POST', '/policies/rate-limits', { ...VALID, conditions: [{ key: 'workspace_id', value: 'team-b' }] }, OTHER_WORKSPACE_ADMIN);
    assert.equal(other.status, 200);
    const fromInference = await call('GET', '/policies/rate-limits', undefined, INFERENCE_ONLY_KEY);
    const ids = (fromInference.json['data'] as Array<{ id: string }>).map((policy) => policy.id);
    assert.ok(!ids.includes(String(other.json['id'])));
  });

  test('PATCH archives (archived policies are listed under status=archived); state policies are read-only', async () => {
    const archived = await call('PATCH', `/policies/rate-limits/${createdId}`, { status: 'archived' });
    assert.equal(archived.status, 200);
    assert.equal(archived.json['status'], 'archived');
    const active = await call('GET', '/policies/rate-limits?type=tokens&unit=rph');
    assert.equal(active.json['total'], 0);
    const listed = await call('GET', '/policies/rate-limits?status=archived');
    assert.deepEqual((listed.json['data'] as Array<{ id: string }>).map((policy) => policy.id), [createdId]);
    assert.equal((await call('PATCH', '/policies/rate-limits/from-state', { status: 'archived' })).status, 409);
    assert.equal((await call('PATCH', '/policies/rate-limits/nope', { status: 'archived' })).status, 404);
    assert.equal((await call('PATCH', `/policies/rate-limits/${createdId}`, { status: 'archived' }, INFERENCE_ONLY_KEY)).status, 403);
  });

  test('policies survive a restart (atomic file under the data dir)', async () => {
    const before = (await call('GET', '/policies/rate-limits?status=archived')).json['data'];
    await harness.close();
    harness = await startHarness({ state: state(), policyStore: await FilePolicyStore.open(join(dataDir, 'policies.json')) });
    const after = (await call('GET', '/policies/rate-limits?status=archived')).json['data'];
    assert.deepEqual(after, before);
  });
});
