// Two real `aigateway serve` processes (two replicas) on one PostgreSQL: the request log
// (--log-store postgres) and gateway-managed batches (DATABASE_URL) are one history for the
// deployment. A request through A is listed, fetched and summed up by B exactly as by A; a
// batch created on A is read on B and, once A has stopped, completed by B.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { TEST_GATEWAY_KEY } from '../helpers/gateway-harness.ts';
import { spawnGateway, type GatewayProcess } from '../batches/gateway-process.ts';
import { postgresBackend, type ProvisionedDatabase } from '../batches/store-backends.ts';
import { eventually } from '../helpers/eventually.ts';

const pg = await postgresBackend();
const RUN = randomUUID();
const HEADERS = { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-a' };

let mock: MockOpenAI;
let dir: string;
let database: ProvisionedDatabase | undefined;
let a: GatewayProcess;
let b: GatewayProcess;

before(async () => {
  if (pg.unavailable !== undefined) return;
  mock = await startMockOpenAI({ replyText: 'done' });
  dir = await mkdtemp(join(tmpdir(), 'aigw-replicas-'));
  const statePath = join(dir, 'gateway.yaml');
  await writeFile(
    statePath,
    dump({
      apiKeys: [{ id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] }],
      providers: [{ slug: 'a', provider: 'openai', virtualKey: 'vk-a', apiKey: 'sk-a', customHost: mock.url }],
      egress: { allow: ['127.0.0.0/8'] },
    }),
  );
  database = await pg.provision();
  // Replicas sharing a database share the key that seals batch credentials; each has its own data dir (its pod's).
  const env = { DATABASE_URL: database.location, AIGATEWAY_LOG_STORE: 'postgres', AIGATEWAY_SECRET_KEY: 'replicas-test-secret-key-0123456789abcdef' };
  a = await spawnGateway(['--config', statePath, '--data-dir', join(dir, 'a'), '--batch-lease-ms', '1500'], env);
  b = await spawnGateway(['--config', statePath, '--data-dir', join(dir, 'b'), '--batch-lease-ms', '1500'], env);
});

after(async () => {
  await a?.crash();
  await b?.crash();
  await mock?.close();
  await database?.cleanup();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...HEADERS, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>, text };
}

describe('two replicas on one PostgreSQL', { skip: pg.unavailable ?? false }, () => {
  test('a request through A is listed, fetched and summed up by B, with the same answer as A', { timeout: 60_000 }, async () => {
    const trace = `replicas-${RUN}`;
    const chat = await call(
      a.url,
      'POST',
      '/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] },
      { 'x-gateway-trace-id': trace, 'x-gateway-metadata': JSON.stringify({ run: RUN }) },
    );
    assert.equal(chat.status, 200, chat.text);

    const listed = await eventually(
      async () => {
        const page = await call(b.url, 'GET', `/logs?trace_id=${trace}`);
        assert.equal(page.status, 200, page.text);
        const data = page.json['data'] as Array<Record<string, unknown>>;
        return data.length === 1 ? data : undefined;
      },
      "B to list A's request",
      { timeoutMs: 20_000 },
    );
    assert.equal(listed[0]?.['trace_id'], trace);
    assert.equal(listed[0]?.['status'], 200);
    const id = String(listed[0]?.['id']);
    const fromB = await call(b.url, 'GET', `/logs/${id}`);
    const fromA = await call(a.url, 'GET', `/logs/${id}`);
    assert.equal(fromB.status, 200, fromB.text);
    assert.deepEqual(fromB.json, fromA.json);

    const summaryPath = `/analytics/summary?metadata.run=${RUN}&group_by=model`;
    const summaryB = await call(b.url, 'GET', summaryPath);
    const summaryA = await call(a.url, 'GET', summaryPath);
    assert.equal(summaryB.status, 200, summaryB.text);
    assert.equal((summaryB.json['total'] as { requests: number }).requests, 1);
    assert.deepEqual(summaryB.json['total'], summaryA.json['total']);
    assert.deepEqual(summaryB.json['data'], summaryA.json['data']);
  });

  test('a batch created on A is read on B and, with A stopped, completed by B', { timeout: 90_000 }, async () => {
    const lines = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `line-${i}` }] } }),
    );
    const form = new FormData();
    form.set('purpose', 'batch');
    form.set('file', new Blob([`${lines.join('\n')}\n`]), 'input.jsonl');
    const upload = await fetch(`${a.url}/files`, { method: 'POST', headers: { ...HEADERS, 'x-gateway-file-storage': 'gateway' }, body: form });
    assert.equal(upload.status, 200);
    const file = (await upload.json()) as { id: string };
    const created = await call(a.url, 'POST', '/batches', { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' });
    assert.equal(created.status, 200, created.text);
    const id = String(created.json['id']);

    const onB = await call(b.url, 'GET', `/batches/${id}`);
    assert.equal(onB.status, 200, onB.text);
    assert.equal(onB.json['input_file_id'], file.id);

    await a.stop();
    const done = await eventually(
      async () => {
        const batch = await call(b.url, 'GET', `/batches/${id}`);
        return batch.json['status'] === 'completed' ? batch.json : undefined;
      },
      'B to complete the batch',
      { timeoutMs: 60_000 },
    );
    const counts = done['request_counts'] as { total: number; completed: number; failed: number };
    assert.equal(counts.total, lines.length);
    // A stopped gracefully: lines it had in flight finished, those it had not claimed B ran; none failed.
    assert.deepEqual(counts, { total: lines.length, completed: lines.length, failed: 0 });
    const output = await fetch(`${b.url}/files/${String(done['output_file_id'])}/content`, { headers: HEADERS });
    assert.equal(output.status, 200);
    assert.equal((await output.text()).trim().split('\n').length, counts.completed);
  });
});
