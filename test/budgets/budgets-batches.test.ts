// Gateway-managed batches under a budget: each line runs through the gateway's pipeline, so
// each line reserves and settles like a direct call, and the lines the budget cannot cover
// are error lines carrying the 429 budget_exceeded.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { toFile } from 'openai';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { startBudgetUpstream, type BudgetUpstream } from './budget-upstream.ts';

let upstream: BudgetUpstream;
let harness: Harness;
let dataDir: string;

before(async () => {
  upstream = await startBudgetUpstream();
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-budget-batches-'));
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: `${upstream.origin}/v1` }],
      modelPrices: [{ model: 'budget-model', inputPerMillion: 1000, outputPerMillion: 2000 }],
      // Each line costs $0.05 and reserves about $0.063: three fit in $0.20, a fourth does not.
      usageLimitPolicies: [{ id: 'batch-budget', workspace_id: 'default', type: 'cost', credit_limit: 0.2, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] }],
    }),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') }, concurrency: 1, pollIntervalMs: 20 })],
  });
});

after(async () => {
  await harness.close();
  await upstream.close();
  await rm(dataDir, { recursive: true, force: true });
});

test('each line of a gateway-managed batch is charged; lines past the budget fail with budget_exceeded', { timeout: 60_000 }, async () => {
  const client = harness.client({ 'x-gateway-virtual-key': 'vk-up', 'x-gateway-file-storage': 'gateway' });
  const lines = Array.from({ length: 8 }, (_, i) =>
    JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'budget-model', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] } }),
  );
  const input = await client.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'batch.jsonl'), purpose: 'batch' });
  const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' as '24h' });
  const done = await eventually(async () => {
    const batch = await client.batches.retrieve(created.id);
    return batch.status === 'completed' || batch.status === 'failed' ? batch : undefined;
  }, 'the batch to finish', { timeoutMs: 30_000 });
  assert.deepEqual(done.request_counts, { total: 8, completed: 3, failed: 5 });
  const text = await (await client.files.content(done.error_file_id as string)).text();
  const errors = text.trim().split('\n').map((line) => JSON.parse(line) as { response: { status_code: number; body: { error: { type: string; code: string } } } });
  for (const line of errors) {
    assert.equal(line.response.status_code, 429);
    assert.equal(line.response.body.error.type, 'budget_exceeded');
    assert.equal(line.response.body.error.code, 'AIGW_ERR_BUDGET_EXCEEDED');
  }
  const spent = await eventually(async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/analytics/budgets`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    const entry = ((await response.json()) as { data: Array<{ policy_id: string; spent: number; groups: Array<{ reserved: number }> }> }).data.find((policy) => policy.policy_id === 'batch-budget');
    return entry !== undefined && entry.groups.every((group) => group.reserved === 0) ? { spent: entry.spent } : undefined;
  }, 'the lines to settle');
  assert.equal(Math.round(spent.spent * 1e6), 150_000);
});
