// Finding 10: the credentials a gateway-managed batch runs with (the creator's gateway key
// and provider key) must not sit in the SQLite database or its WAL in the clear, and are
// wiped when the batch ends; every data file is owner-only (0600).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DatabaseSync } from 'node:sqlite';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { SqliteLogStore } from '../../proxy/logs/sqlite-log-store.ts';
import { FilePolicyStore } from '../../proxy/ratelimit/policy-store.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const GATEWAY_KEY = 'gw-batch-creator-secret-0123456789abcdef';
const PROVIDER_KEY = 'sk-provider-secret-from-request-0123456789';

let mock: MockOpenAI;
let harness: Harness;
let dataDir: string;
let logs: SqliteLogStore;

before(async () => {
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-secrets-at-rest-'));
  logs = await SqliteLogStore.open({ path: join(dataDir, 'request-logs.sqlite') });
  const state = baseState();
  (state['apiKeys'] as unknown[]).push({ id: 'creator', key: GATEWAY_KEY, workspace: 'ws', scopes: ['inference'] });
  harness = await startHarness({
    state,
    env: {},
    policyStore: await FilePolicyStore.open(join(dataDir, 'rate-limit-policies.json')),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') }, pollIntervalMs: 20 })],
  });
});
after(async () => {
  await harness.close();
  await logs.close();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** Every byte the gateway keeps on disk, file by file. */
async function filesOnDisk(): Promise<Array<{ name: string; bytes: Buffer; mode: number }>> {
  const names = await readdir(dataDir);
  return Promise.all(names.map(async (name) => ({ name, bytes: await readFile(join(dataDir, name)), mode: (await stat(join(dataDir, name))).mode & 0o777 })));
}

function holders(files: Array<{ name: string; bytes: Buffer }>, secret: string): string[] {
  return files.filter((file) => file.bytes.includes(Buffer.from(secret, 'utf8'))).map((file) => file.name);
}

async function call(method: string, path: string, init: { body?: string | FormData; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: {
      'x-gateway-api-key': GATEWAY_KEY,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.url,
      authorization: `Bearer ${PROVIDER_KEY}`,
      'x-gateway-file-storage': 'gateway',
      ...init.headers,
    },
    body: init.body,
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

describe('batch credentials at rest', () => {
  test('sealed while the batch runs, wiped (database and WAL) once it ends; data files 0600', async () => {
    const form = new FormData();
    const lines = ['a', 'b'].map((id) => JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } }));
    form.set('purpose', 'batch');
    form.set('file', new Blob([`${lines.join('\n')}\n`]), 'input.jsonl');
    const uploaded = await call('POST', '/files', { body: form });
    assert.equal(uploaded.status, 200, uploaded.text);
    // Hold the lines at the provider so the batch is still running when we look.
    mock.enqueue({ delayMs: 400 });
    mock.enqueue({ delayMs: 400 });
    const created = await call('POST', '/batches', {
      body: JSON.stringify({ input_file_id: uploaded.json['id'], endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(created.status, 200, created.text);
    const id = String(created.json['id']);

    const running = await filesOnDisk();
    assert.deepEqual(holders(running, GATEWAY_KEY), [], 'no gateway key in the clear while the batch runs');
    assert.deepEqual(holders(running, PROVIDER_KEY), [], 'no provider key in the clear while the batch runs');

    await eventually(async () => (await call('GET', `/batches/${id}`)).json['status'] === 'completed', 'the batch to complete', { timeoutMs: 15_000 });
    const done = await call('GET', `/batches/${id}`);
    assert.deepEqual(done.json['request_counts'], { total: 2, completed: 2, failed: 0 }, 'the lines ran with the sealed credentials');

    const ended = await filesOnDisk();
    assert.deepEqual(holders(ended, GATEWAY_KEY), []);
    assert.deepEqual(holders(ended, PROVIDER_KEY), []);
    const wal = ended.find((file) => file.name === 'batches.sqlite-wal');
    assert.ok(wal === undefined || wal.bytes.length === 0, 'the WAL was checkpointed and truncated after the wipe');
    // Not even the sealed value stays once the batch is over.
    const db = new DatabaseSync(join(dataDir, 'batches.sqlite'), { readOnly: true });
    try {
      assert.equal((db.prepare('SELECT headers FROM aigw_batches WHERE id = ?').get(id) as { headers: string }).headers, '');
    } finally {
      db.close();
    }

    await harness.gateway.policyStore.create({ type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'workspace_id', value: 'ws' }], group_by: [{ key: 'api_key' }] });
    for (const file of await filesOnDisk()) assert.equal(file.mode, 0o600, `${file.name} is ${file.mode.toString(8)}`);
    assert.ok((await readdir(dataDir)).includes('secret.key'), 'the standalone key file was generated');
  });
});
