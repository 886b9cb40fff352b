// Gateway-managed batches survive a crash: real `aigateway serve` processes, `kill -9`
// mid-run, a restart, and the batch completes with every line executed at most once (the
// mock counts calls per custom_id). Standalone on SQLite; then two processes sharing one
// PostgreSQL, one of them killed while both work.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { INTERRUPTED_LINE_CODE } from '../../proxy/batches/batch-output.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { TEST_GATEWAY_KEY } from '../helpers/gateway-harness.ts';
import { spawnGateway, type GatewayProcess } from '../batches/gateway-process.ts';
import { adminQuery, postgresBackend, type ProvisionedDatabase } from '../batches/store-backends.ts';
import { eventually } from '../helpers/eventually.ts';

const LINES = 200;
const pg = await postgresBackend();
let mock: MockOpenAI;
let dir: string;
let statePath: string;
const running: GatewayProcess[] = [];

before(async () => {
  mock = await startMockOpenAI({ replyText: 'done' });
  dir = await mkdtemp(join(tmpdir(), 'aigw-batches-crash-'));
  statePath = join(dir, 'gateway.yaml');
  await writeFile(
    statePath,
    dump({
      apiKeys: [{ id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference'] }],
      providers: [{ slug: 'a', provider: 'openai', virtualKey: 'vk-a', apiKey: 'sk-a', customHost: mock.url }],
      egress: { allow: ['127.0.0.0/8'] },
    }),
  );
});

after(async () => {
  for (const gateway of running) await gateway.crash();
  await mock.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => mock.reset());

async function start(args: string[], env: Record<string, string> = {}): Promise<GatewayProcess> {
  const gateway = await spawnGateway(['--config', statePath, ...args], { AIGATEWAY_BATCH_CONCURRENCY: '4', ...env });
  running.push(gateway);
  return gateway;
}

const HEADERS = { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-a' };

async function api(base: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...HEADERS, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text) as Record<string, unknown>;
}

async function createBatch(base: string): Promise<string> {
  const lines = Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `line-${i}` }] } }),
  );
  const form = new FormData();
  form.set('purpose', 'batch');
  form.set('file', new Blob([`${lines.join('\n')}\n`]), 'input.jsonl');
  const upload = await fetch(`${base}/files`, { method: 'POST', headers: { ...HEADERS, 'x-gateway-file-storage': 'gateway' }, body: form });
  const file = (await upload.json()) as { id: string };
  const batch = await api(base, 'POST', '/batches', { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' });
  return String(batch['id']);
}

async function counts(base: string, id: string): Promise<{ status: string; completed: number; failed: number; total: number; batch: Record<string, unknown> }> {
  const batch = await api(base, 'GET', `/batches/${id}`);
  const requestCounts = batch['request_counts'] as { completed: number; failed: number; total: number };
  return { status: String(batch['status']), ...requestCounts, batch };
}

async function fileLines(base: string, id: unknown): Promise<Array<Record<string, unknown>>> {
  if (typeof id !== 'string') return [];
  const response = await fetch(`${base}/files/${id}/content`, { headers: HEADERS });
  return (await response.text()).trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The exactly-once checks: every line is in one file once, and no line reached the provider twice. */
async function assertNoDuplicates(base: string, id: string): Promise<{ interrupted: number }> {
  const final = await counts(base, id);
  assert.equal(final.status, 'completed');
  assert.equal(final.total, LINES);
  assert.equal(final.completed + final.failed, LINES);
  const output = await fileLines(base, final.batch['output_file_id']);
  const errors = await fileLines(base, final.batch['error_file_id']);
  assert.equal(output.length, final.completed);
  assert.equal(errors.length, final.failed);
  const inFiles = [...output, ...errors].map((line) => String(line['custom_id']));
  assert.equal(new Set(inFiles).size, LINES, 'each line appears once across output and error files');
  const calls = new Map<string, number>();
  for (const request of mock.requests) {
    const customId = (request.json as { messages: Array<{ content: string }> }).messages[0]?.content ?? '';
    calls.set(customId, (calls.get(customId) ?? 0) + 1);
  }
  const duplicates = [...calls].filter(([, count]) => count > 1);
  assert.deepEqual(duplicates, [], 'no line was sent to the provider twice');
  for (const line of output) assert.equal(calls.get(String(line['custom_id'])), 1, 'a completed line was sent exactly once');
  for (const line of errors) assert.equal((line['error'] as { code: string } | null)?.code, INTERRUPTED_LINE_CODE, 'only interrupted lines fail');
  return { interrupted: errors.length };
}

function delayEveryReply(ms: number): void {
  for (let i = 0; i < LINES * 2; i++) mock.enqueue({ delayMs: ms });
}

/** The status of each line of a standalone gateway's batch, read from its SQLite file. */
function lineStatuses(dataDir: string, id: string): Map<string, number> {
  const db = new DatabaseSync(join(dataDir, 'batches.sqlite'), { readOnly: true });
  try {
    const rows = db.prepare('SELECT status, count(*) AS n FROM aigw_batch_lines WHERE batch_id = ? GROUP BY status').all(id);
    return new Map(rows.map((row) => [String(row['status']), Number(row['n'])]));
  } finally {
    db.close();
  }
}

describe('graceful stop', () => {
  test('SIGTERM while a line runs and a client holds the drain: the line finishes, no line is claimed to fail, a restart completes the batch', async () => {
    const dataDir = join(dir, 'sigterm-data');
    let releaseClient!: () => void;
    let releaseLine!: () => void;
    mock.enqueue({ until: new Promise<void>((r) => (releaseClient = r)) }, { until: new Promise<void>((r) => (releaseLine = r)) });
    const first = await start(['--data-dir', dataDir], { AIGATEWAY_BATCH_CONCURRENCY: '1' });
    const held = api(first.url, 'POST', '/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'held' }] });
    await mock.waitForRequests(1);
    const id = await createBatch(first.url);
    await mock.waitForRequests(2);
    first.child.kill('SIGTERM');
    // Closing has begun once new connections are refused; the held client keeps the drain open.
    await eventually(async () => (await fetch(`${first.url}/health`).then(() => false, () => true)) || undefined, 'new connections refused');
    releaseLine();
    await eventually(async () => (lineStatuses(dataDir, id).get('succeeded') === 1 ? true : undefined), 'the line in flight recorded');
    releaseClient();
    await held;
    await first.stop();
    const left = lineStatuses(dataDir, id);
    assert.deepEqual([...left].sort(), [['pending', LINES - 1], ['succeeded', 1]], 'nothing failed, nothing left running');
    const second = await start(['--data-dir', dataDir]);
    await eventually(async () => ((await counts(second.url, id)).status === 'completed' ? true : undefined), 'batch completed after restart', { timeoutMs: 60_000 });
    const { interrupted } = await assertNoDuplicates(second.url, id);
    assert.equal(interrupted, 0);
    await second.stop();
  });
});

describe('crash recovery', () => {
  test('standalone (SQLite): kill -9 mid-run, restart, the batch completes with no line run twice', async (t) => {
    const dataDir = join(dir, 'sqlite-data');
    delayEveryReply(25);
    const first = await start(['--data-dir', dataDir]);
    const id = await createBatch(first.url);
    await eventually(async () => (await counts(first.url, id)).completed >= 40, '40 lines done', { timeoutMs: 30_000 });
    await first.crash();
    const second = await start(['--data-dir', dataDir]);
    await eventually(async () => (await counts(second.url, id)).status === 'completed', 'batch completed after restart', { timeoutMs: 60_000 });
    const { interrupted } = await assertNoDuplicates(second.url, id);
    assert.ok(interrupted <= 4, 'at most the lines in flight (concurrency 4) were interrupted');
    t.diagnostic(`lines interrupted by the crash: ${interrupted}; provider calls: ${mock.requests.length}`);
    await second.stop();
  });

  test('PostgreSQL: two processes share the work; one is killed mid-run and restarted; no line runs twice', { skip: pg.unavailable }, async (t) => {
    const database: ProvisionedDatabase = await pg.provision();
    try {
      delayEveryReply(25);
      // Replicas sharing a database share the key that seals batch credentials.
      const env = { DATABASE_URL: database.location, AIGATEWAY_SECRET_KEY: 'crash-recovery-test-secret-key-0123456789' };
      // Short, so the killed process's lines are failed soon; long enough that a live process on a
      // loaded machine (the whole suite, two files at once) is not taken for dead between heartbeats.
      const args = ['--data-dir', join(dir, 'pg-data'), '--batch-lease-ms', '3000'];
      const one = await start(args, env);
      const two = await start(args, env);
      const id = await createBatch(one.url);
      await eventually(async () => (await counts(two.url, id)).completed >= 60, '60 lines done', { timeoutMs: 30_000 });
      await one.crash();
      const again = await start(args, env);
      await eventually(async () => (await counts(two.url, id)).status === 'completed', 'batch completed by the survivors', { timeoutMs: 60_000 });
      const { interrupted } = await assertNoDuplicates(again.url, id);
      assert.ok(interrupted <= 4, 'at most the killed process’s lines in flight were interrupted');
      t.diagnostic(`lines interrupted by the crash: ${interrupted}; provider calls: ${mock.requests.length}`);
      const schema = /search_path=(\w+)/.exec(decodeURIComponent(database.location))?.[1] ?? '';
      const workers = await adminQuery(`SELECT count(DISTINCT worker) AS n FROM ${schema}.aigw_batch_lines WHERE batch_id = '${id}'`);
      assert.ok(Number(workers.rows[0]?.n) >= 2, 'more than one process ran lines');
      await two.stop();
      await again.stop();
    } finally {
      await database.cleanup();
    }
  });
});
