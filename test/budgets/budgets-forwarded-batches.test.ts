// Provider-forwarded batches (completion_window "24h") under a budget: nothing is reserved
// when they are created (the provider runs the lines); the first retrieve that finds the
// batch finished downloads its output file and charges each successful line's usage, once,
// however often (or concurrently) it is retrieved afterwards. A running batch, a failed line
// and a policy for another model charge nothing. The batch is charged to the key that
// created it, never to the one retrieving it (in memory and in the real Redis).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { MemoryBudgetStore, type BudgetStore } from '../../proxy/budgets/budget-store.ts';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import { UNITS_PER_USD } from '../../proxy/budgets/budget-enforcer.ts';
import { PREFIX, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';
import { sumBatchResultUsage } from '../../proxy/batches/forwarded-batch-charging.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { startMockOpenAIBatches, type MockOpenAIBatches } from '../fixtures/mock-openai-batches.ts';

// $0.001 per prompt token, $0.002 per completion token: 100 + 50 tokens cost $0.20.
const PRICES = [{ model: 'budget-model', inputPerMillion: 1000, outputPerMillion: 2000, cachedInputPerMillion: 100 }];

let mock: MockOpenAIBatches;
let harness: Harness;
let dataDir: string;

before(async () => {
  mock = await startMockOpenAIBatches();
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-budget-fwd-batches-'));
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: mock.url }],
      modelPrices: PRICES,
      usageLimitPolicies: [
        { id: 'batch-dollars', type: 'cost', credit_limit: 10, conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'api_key' }] },
        { id: 'batch-tokens', type: 'tokens', credit_limit: 1_000_000, conditions: [{ key: 'workspace_id', value: 'default' }, { key: 'model', value: 'budget-model' }], group_by: [{ key: 'workspace_id' }] },
        { id: 'other-model', type: 'cost', credit_limit: 10, conditions: [{ key: 'workspace_id', value: 'default' }, { key: 'model', value: 'gpt-4o' }], group_by: [{ key: 'workspace_id' }] },
      ],
    }),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') }, concurrency: 1, pollIntervalMs: 50 })],
  });
});

after(async () => {
  await harness.close();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

function resultLine(customId: string, status: number, usage?: Record<string, unknown>): string {
  const body = status === 200 ? { id: `chatcmpl-${customId}`, object: 'chat.completion', model: 'budget-model', choices: [], usage } : { error: { message: 'bad', type: 'invalid_request_error' } };
  return JSON.stringify({ id: `batch_req_${customId}`, custom_id: customId, response: { status_code: status, request_id: 'req', body }, error: null });
}

function seedBatch(id: string, status: string, lines: string[]): void {
  const outputId = `file-out-${id}`;
  const content = Buffer.from(`${lines.join('\n')}\n`);
  mock.files.set(outputId, { object: { id: outputId, object: 'file', bytes: content.length, created_at: 1, filename: 'batch_output.jsonl', purpose: 'batch_output' }, content });
  mock.batches.set(id, {
    id,
    object: 'batch',
    endpoint: '/v1/chat/completions',
    input_file_id: 'file-in',
    completion_window: '24h',
    status,
    output_file_id: status === 'in_progress' ? null : outputId,
    error_file_id: null,
    created_at: 1,
    request_counts: { total: lines.length, completed: lines.length, failed: 0 },
    metadata: null,
  });
}

async function spendOf(id: string): Promise<number> {
  const response = await fetch(`${harness.gateway.origin}/v1/analytics/budgets`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
  const data = ((await response.json()) as { data: Array<{ policy_id: string; spent: number }> }).data;
  return data.find((entry) => entry.policy_id === id)?.spent ?? 0;
}

const downloads = (fileId: string) => mock.calls.filter((call) => call.method === 'GET' && call.path === `/files/${fileId}/content`).length;

describe('forwarded batches charged by their results', () => {
  test('a running batch charges nothing; once completed, each successful line is charged once, however often it is retrieved', { timeout: 30_000 }, async () => {
    const client = harness.client({ 'x-gateway-virtual-key': 'vk-up' });
    seedBatch('batch_run', 'in_progress', []);
    const running = await client.batches.retrieve('batch_run');
    assert.equal(running.status, 'in_progress');
    assert.equal(await spendOf('batch-dollars'), 0);

    seedBatch('batch_done', 'completed', [
      resultLine('a', 200, { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 }),
      resultLine('b', 200, { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 }),
      // 80 of 100 prompt tokens read from the cache: 20 × $0.001 + 80 × $0.0001 + 50 × $0.002 = $0.128.
      resultLine('c', 200, { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, prompt_tokens_details: { cached_tokens: 80 } }),
      resultLine('d', 400),
    ]);
    const retrieved = await Promise.all([client.batches.retrieve('batch_done'), client.batches.retrieve('batch_done'), client.batches.retrieve('batch_done')]);
    for (const batch of retrieved) {
      assert.equal(batch.status, 'completed');
      assert.equal(batch.output_file_id, 'file-out-batch_done');
    }
    const dollars = await eventually(async () => ((await spendOf('batch-dollars')) > 0 ? spendOf('batch-dollars') : undefined), 'the batch charged');
    assert.ok(Math.abs(dollars - 0.528) < 1e-6, `spent ${dollars}`);
    assert.equal(await eventually(async () => ((await spendOf('batch-tokens')) > 0 ? spendOf('batch-tokens') : undefined), 'tokens charged'), 450);
    assert.equal(await spendOf('other-model'), 0, 'a policy for another model is not charged');
    await client.batches.retrieve('batch_done');
    assert.equal(downloads('file-out-batch_done'), 1, 'the output file is read once');
    assert.ok(Math.abs((await spendOf('batch-dollars')) - 0.528) < 1e-6, 'charged once');
  });

  test('an output file the provider cannot serve charges nothing, and a later retrieve tries again', { timeout: 30_000 }, async () => {
    const client = harness.client({ 'x-gateway-virtual-key': 'vk-up' });
    const before = await spendOf('batch-dollars');
    seedBatch('batch_late', 'completed', [resultLine('a', 200, { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000 })]);
    const saved = mock.files.get('file-out-batch_late');
    mock.files.delete('file-out-batch_late');
    await client.batches.retrieve('batch_late');
    await eventually(() => downloads('file-out-batch_late') === 1, 'the failed download');
    assert.equal(await spendOf('batch-dollars'), before);
    if (saved !== undefined) mock.files.set('file-out-batch_late', saved);
    const charged = await eventually(async () => {
      await client.batches.retrieve('batch_late');
      const spent = await spendOf('batch-dollars');
      return spent > before ? spent : undefined;
    }, 'the batch charged on a later retrieve');
    assert.ok(Math.abs(charged - before - 1) < 1e-6, `charged ${charged - before}`);
  });
});

describe('sumBatchResultUsage', () => {
  test('sums per model across chunk boundaries; skips errors, junk and lines over the cap; Responses usage counts too', async () => {
    const lines = [
      resultLine('a', 200, { prompt_tokens: 3, completion_tokens: 4 }),
      'not json',
      resultLine('b', 500),
      JSON.stringify({ custom_id: 'r', response: { status_code: 200, body: { model: 'resp-model', usage: { input_tokens: 7, output_tokens: 9, input_tokens_details: { cached_tokens: 2 } } } } }),
      JSON.stringify({ custom_id: 'neg', response: { status_code: 200, body: { model: 'budget-model', usage: { prompt_tokens: -5, completion_tokens: 1e20 } } } }),
    ].join('\n');
    const bytes = Buffer.from(`${lines}\r\n`);
    async function* chunks() {
      for (let at = 0; at < bytes.length; at += 7) yield bytes.subarray(at, at + 7);
    }
    const usage = await sumBatchResultUsage(chunks());
    assert.deepEqual(Object.fromEntries(usage.byModel), {
      'budget-model': { prompt: 3, completion: 4, cachedPrompt: 0, lines: 1 },
      'resp-model': { prompt: 7, completion: 9, cachedPrompt: 2, lines: 1 },
    });
    assert.equal(usage.lines, 5);
    assert.equal(usage.skipped, 3);
    async function* huge() {
      yield Buffer.alloc(17 * 1024 * 1024, 0x61);
      yield Buffer.from(`\n${resultLine('z', 200, { prompt_tokens: 1, completion_tokens: 1 })}`);
    }
    const capped = await sumBatchResultUsage(huge());
    assert.equal(capped.skipped, 1);
    assert.equal(capped.byModel.get('budget-model')?.lines, 1);
  });
});

// Key A creates, keys B (same workspace) and C (another workspace) retrieve. Each key has its
// own cost policy; the store is read directly so every key's spend is visible.
const KEY_B = 'gw-key-b-0123456789-0123456789-012';
const KEY_C = 'gw-key-c-0123456789-0123456789-012';
const perKey = (id: string, key: string, workspace?: string) => ({
  id,
  type: 'cost',
  credit_limit: 100,
  conditions: [{ key: 'api_key', value: key }],
  group_by: [{ key: 'api_key' }],
  ...(workspace === undefined ? {} : { workspace_id: workspace }),
});

async function creatorCharging(store: BudgetStore): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-budget-fwd-creator-'));
  const gateway = await startHarness({
    state: baseState({
      apiKeys: [
        { id: 'key-a', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] },
        { id: 'key-b', key: KEY_B, scopes: ['inference'] },
        { id: 'key-c', key: KEY_C, workspace: 'team-c', scopes: ['inference'] },
      ],
      providers: [{ slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: mock.url }],
      modelPrices: PRICES,
      usageLimitPolicies: [
        perKey('a-dollars', 'key-a'),
        perKey('b-dollars', 'key-b'),
        perKey('c-dollars', 'key-c', 'team-c'),
        { id: 'team-c-dollars', type: 'cost', credit_limit: 100, conditions: [{ key: 'workspace_id', value: 'team-c' }], group_by: [{ key: 'workspace_id' }], workspace_id: 'team-c' },
      ],
    }),
    budgetStore: store,
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dir, 'batches.sqlite') }, concurrency: 1, pollIntervalMs: 50 })],
  });
  try {
    const spent = async (policy: string): Promise<number> => {
      const counters = await store.scan(`{budget}:${policy}:`, 100);
      return counters.reduce((sum, counter) => sum + counter.spent, 0) / UNITS_PER_USD;
    };
    const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-6, `${what}: ${actual}, expected ${expected}`);
    const a = gateway.client({ 'x-gateway-virtual-key': 'vk-up' });
    const b = gateway.client({ 'x-gateway-virtual-key': 'vk-up', 'x-gateway-api-key': KEY_B });
    const c = gateway.client({ 'x-gateway-virtual-key': 'vk-up', 'x-gateway-api-key': KEY_C });
    mock.files.set('file-in', { object: { id: 'file-in', object: 'file', bytes: 2, created_at: 1, filename: 'in.jsonl', purpose: 'batch' }, content: Buffer.from('{}') });
    // 1000 prompt tokens at $0.001: each finished batch costs $1.
    const finish = (id: string) => {
      const line = resultLine('x', 200, { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000 });
      const outputId = `file-out-${id}`;
      mock.files.set(outputId, { object: { id: outputId, object: 'file', bytes: line.length, created_at: 1, filename: 'out.jsonl', purpose: 'batch_output' }, content: Buffer.from(`${line}\n`) });
      Object.assign(mock.batches.get(id) ?? {}, { status: 'completed', output_file_id: outputId });
    };
    const created = await Promise.all([1, 2].map(() => a.batches.create({ input_file_id: 'file-in', endpoint: '/v1/chat/completions', completion_window: '24h' })));
    const [first, second] = created.map((batch) => batch.id) as [string, string];
    finish(first);
    finish(second);

    // Same workspace, another key: A pays, B does not.
    assert.equal((await b.batches.retrieve(first)).status, 'completed');
    near(await eventually(() => spent('a-dollars'), 'the creator charged'), 1, 'key A after B retrieved');
    near(await spent('b-dollars'), 0, 'key B (the retriever)');

    // Another workspace: A pays, nothing of C's workspace is charged.
    assert.equal((await c.batches.retrieve(second)).status, 'completed');
    near(await eventually(async () => ((await spent('a-dollars')) > 1.5 ? spent('a-dollars') : undefined), 'the creator charged again'), 2, 'key A after C retrieved');
    near(await spent('c-dollars'), 0, 'key C (another workspace)');
    near(await spent('team-c-dollars'), 0, "C's workspace");

    // A batch created directly at the provider has no creator: the retriever pays, as before.
    const direct = `batch_direct_${randomUUID()}`;
    mock.batches.set(direct, { id: direct, object: 'batch', endpoint: '/v1/chat/completions', input_file_id: 'file-in', completion_window: '24h', status: 'in_progress', output_file_id: null });
    finish(direct);
    await b.batches.retrieve(direct);
    near(await eventually(() => spent('b-dollars'), 'the retriever charged'), 1, 'key B for a batch with no creator record');
    near(await spent('a-dollars'), 2, 'key A unchanged');
  } finally {
    await gateway.close();
    await rm(dir, { recursive: true, force: true });
  }
}

describe('a forwarded batch is charged to the key that created it', () => {
  test('in memory: created by A, retrieved by B or by C of another workspace, A pays; no creator record, the retriever pays', { timeout: 30_000 }, () =>
    creatorCharging(new MemoryBudgetStore()));

  test('in Redis: the same, with the creator recorded in the shared store', { timeout: 30_000, skip }, () =>
    creatorCharging(new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 1000 })));

  test('the stores keep a creator record once (first write wins) and forget it after its TTL', async () => {
    let now = 1_000_000;
    const memory = new MemoryBudgetStore({ now: () => now, maxRecords: 2 });
    await memory.remember('r1', 'first', 10);
    await memory.remember('r1', 'second', 10);
    assert.equal(await memory.recall('r1'), 'first');
    now += 10_000;
    assert.equal(await memory.recall('r1'), undefined);
    for (const key of ['x', 'y', 'z']) await memory.remember(key, key, 10);
    assert.equal(await memory.recall('x'), undefined, 'bounded: the oldest record goes');
    assert.equal(await memory.recall('z'), 'z');
    if (skip !== false) return;
    const redis = new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 1000 });
    try {
      await redis.remember('{budget}#creator-test', 'first', 30);
      await redis.remember('{budget}#creator-test', 'second', 30);
      assert.equal(await redis.recall('{budget}#creator-test'), 'first');
      assert.equal(await redis.recall('{budget}#never-written'), undefined);
    } finally {
      await redis.close();
    }
  });
});
