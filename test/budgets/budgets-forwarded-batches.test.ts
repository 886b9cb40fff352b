// Provider-forwarded batches (completion_window "24h") under a budget: nothing is reserved
// when they are created (the provider runs the lines); the first retrieve that finds the
// batch finished downloads its output file and charges each successful line's usage, once,
// however often (or concurrently) it is retrieved afterwards. A running batch, a failed line
// and a policy for another model charge nothing.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
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
