// Isolation on every by-id route of gateway-managed objects: a key sees only its own
// workspace's files, batches and request logs; another workspace's id answers 404 (and
// cannot be read, cancelled or deleted) — the same answer as an id that never existed.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { requestLogRoutes } from '../../proxy/logs/request-log-routes.ts';
import { SqliteLogStore } from '../../proxy/logs/sqlite-log-store.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const OWNER = 'gw-owner-workspace-a-0123456789abcdef';
const INTRUDER = 'gw-intruder-workspace-b-0123456789ab';
const INTRUDER_ADMIN_LESS_LOGS = 'gw-intruder-no-admin-logs-0123456789';

let mock: MockOpenAI;
let harness: Harness;
let dataDir: string;
let logs: SqliteLogStore;

before(async () => {
  mock = await startMockOpenAI();
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-isolation-'));
  logs = await SqliteLogStore.open({ path: join(dataDir, 'request-logs.sqlite') });
  const state = baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-mock-provider-key', customHost: mock.url }] });
  (state['apiKeys'] as unknown[]).push(
    { id: 'owner', key: OWNER, workspace: 'ws-a', scopes: ['inference'] },
    { id: 'intruder', key: INTRUDER, workspace: 'ws-b', scopes: ['inference'] },
    { id: 'intruder-logs', key: INTRUDER_ADMIN_LESS_LOGS, workspace: 'ws-b', scopes: ['inference'] },
  );
  harness = await startHarness({
    state,
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') }, pollIntervalMs: 20 }), requestLogRoutes(logs)],
  });
});
after(async () => {
  await harness.close();
  await logs.close();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function call(method: string, path: string, key: string, init: { body?: string | FormData; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': key, 'x-gateway-provider': '@mock', 'x-gateway-file-storage': 'gateway', ...init.headers },
    body: init.body,
  });
  const text = await response.text();
  return { status: response.status, text, json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
}

async function upload(key: string): Promise<string> {
  const form = new FormData();
  const line = JSON.stringify({ custom_id: 'one', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });
  form.set('purpose', 'batch');
  form.set('file', new Blob([`${line}\n`]), 'input.jsonl');
  const uploaded = await call('POST', '/files', key, { body: form });
  assert.equal(uploaded.status, 200, uploaded.text);
  return String(uploaded.json['id']);
}

describe('gateway-managed files', () => {
  test("another workspace's file: metadata, content and delete all answer 404, and it stays", async () => {
    const id = await upload(OWNER);
    for (const [method, path] of [['GET', `/files/${id}`], ['GET', `/files/${id}/content`], ['DELETE', `/files/${id}`]] as const) {
      const answer = await call(method, path, INTRUDER);
      assert.equal(answer.status, 404, `${method} ${path}`);
      assert.equal((answer.json['error'] as { code: string }).code, 'AIGW_ERR_NOT_FOUND');
    }
    const listed = await call('GET', '/files', INTRUDER);
    assert.ok(!listed.text.includes(id));
    assert.equal((await call('GET', `/files/${id}/content`, OWNER)).status, 200, 'the owner still has it');
  });

  test("a batch cannot be created from another workspace's file", async () => {
    const id = await upload(OWNER);
    const created = await call('POST', '/batches', INTRUDER, {
      body: JSON.stringify({ input_file_id: id, endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(created.status, 400);
    assert.equal((created.json['error'] as { param: string }).param, 'input_file_id');
  });
});

describe('gateway-managed batches', () => {
  test("another workspace's batch: retrieve and cancel answer 404; the list leaves it out", async () => {
    const file = await upload(OWNER);
    const created = await call('POST', '/batches', OWNER, {
      body: JSON.stringify({ input_file_id: file, endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(created.status, 200, created.text);
    const id = String(created.json['id']);
    assert.equal((await call('GET', `/batches/${id}`, INTRUDER)).status, 404);
    assert.equal((await call('POST', `/batches/${id}/cancel`, INTRUDER)).status, 404);
    assert.ok(!(await call('GET', '/batches', INTRUDER)).text.includes(id));
    await eventually(async () => (await call('GET', `/batches/${id}`, OWNER)).json['status'] === 'completed', 'the batch to complete', { timeoutMs: 10_000 });
    const done = await call('GET', `/batches/${id}`, OWNER);
    const output = String(done.json['output_file_id']);
    assert.equal((await call('GET', `/files/${output}/content`, INTRUDER)).status, 404, "its output file is the owner's too");
  });
});

describe('request logs', () => {
  test('a key without admin reads no logs (not even its own workspace through a filter)', async () => {
    for (const path of ['/logs', '/logs?workspace=ws-a', '/analytics/summary']) {
      assert.equal((await call('GET', path, INTRUDER_ADMIN_LESS_LOGS)).status, 403, path);
    }
  });
});
