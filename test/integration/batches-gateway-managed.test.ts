// Gateway-managed batches end to end, in-process: the official openai SDK uploads a JSONL
// file to the gateway and creates an `immediate` batch; every line runs through the
// gateway's own pipeline (a fallback config over two mock providers); output and error
// files, request_counts, states and timestamps are checked, and a cancel mid-run.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { openapiAvailable, schemaProblems } from '../batches/openapi-shapes.ts';
import { startMockOpenAIBatches, type MockOpenAIBatches } from '../fixtures/mock-openai-batches.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

let a: MockOpenAI;
let b: MockOpenAI;
let files: MockOpenAIBatches;
let harness: Harness;
let dataDir: string;
let client: OpenAI;

before(async () => {
  a = await startMockOpenAI({ replyText: 'from a' });
  b = await startMockOpenAI({ replyText: 'from b' });
  files = await startMockOpenAIBatches();
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-batches-gm-'));
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'a', provider: 'openai', apiKey: 'sk-a', customHost: a.url },
        { slug: 'b', provider: 'openai', apiKey: 'sk-b', customHost: b.url },
        { slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: files.url },
      ],
      configs: [{ id: 'fb', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@a' }, { provider: '@b' }] } }],
    }),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') }, concurrency: 8, pollIntervalMs: 20 })],
  });
  client = harness.client({ 'x-gateway-config': 'fb', 'x-gateway-file-storage': 'gateway' });
});

after(async () => {
  await harness.close();
  for (const mock of [a, b]) await mock.close();
  await files.close();
  await rm(dataDir, { recursive: true, force: true });
});

beforeEach(() => {
  a.reset();
  b.reset();
  files.reset();
});

function chatLine(customId: string, body?: Record<string, unknown>): string {
  return JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: body ?? { model: 'gpt-4o-mini', messages: [{ role: 'user', content: customId }] },
  });
}

async function uploadLines(lines: string[]): Promise<OpenAI.FileObject> {
  return client.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'batch.jsonl'), purpose: 'batch' });
}

async function waitForStatus(id: string, statuses: string[], timeoutMs = 30_000): Promise<OpenAI.Batch> {
  return eventually(
    async () => {
      const batch = await client.batches.retrieve(id);
      return statuses.includes(batch.status) ? batch : undefined;
    },
    `batch ${id} to reach ${statuses.join('/')}`,
    { timeoutMs },
  );
}

async function fileLines(id: string | null | undefined): Promise<Array<Record<string, unknown>>> {
  if (id === null || id === undefined) return [];
  const text = await (await client.files.content(id)).text();
  return text.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

function contentOf(request: { json: unknown }): string {
  return ((request.json as { messages: Array<{ content: string }> }).messages[0]?.content) ?? '';
}

function assertSchema(name: string, value: unknown): void {
  if (openapiAvailable) assert.deepEqual(schemaProblems(name, value), [], `${name} shape`);
}

describe('gateway-managed batches', () => {
  test('a 200-line batch through a fallback config completes with correct output, error file and request_counts', async () => {
    const lines: string[] = [];
    const invalid = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const id = `req-${i}`;
      if (i % 20 === 19) {
        invalid.add(id);
        lines.push(chatLine(id, { model: 'gpt-4o-mini', messages: 'not an array' }));
      } else lines.push(chatLine(id));
    }
    // Provider a fails every other request it gets (503); the config falls back to b.
    for (let i = 0; i < 190; i++) a.enqueue(i % 2 === 0 ? { status: 503, body: { error: { message: 'overloaded', type: 'server_error' } } } : {});
    const input = await uploadLines(lines);
    assert.match(input.id, /^gwfile-/);
    assertSchema('OpenAIFile', input);
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' as '24h', metadata: { run: 'fb' } });
    assert.match(created.id, /^gwbatch-/);
    assert.equal(created.status, 'validating');
    assertSchema('Batch', created);

    const done = await waitForStatus(created.id, ['completed', 'failed']);
    assert.equal(done.status, 'completed');
    assertSchema('Batch', done);
    assert.deepEqual(done.request_counts, { total: 200, completed: 190, failed: 10 });
    assert.deepEqual(done.metadata, { run: 'fb' });
    for (const moment of ['in_progress_at', 'finalizing_at', 'completed_at'] as const) assert.equal(typeof done[moment], 'number', moment);
    assert.ok((done.in_progress_at ?? 0) <= (done.finalizing_at ?? 0) && (done.finalizing_at ?? 0) <= (done.completed_at ?? 0));

    const output = await fileLines(done.output_file_id);
    const errors = await fileLines(done.error_file_id);
    assert.equal(output.length, 190);
    assert.equal(errors.length, 10);
    assert.deepEqual(new Set(errors.map((line) => line['custom_id'])), invalid);
    for (const line of errors) {
      const response = line['response'] as { status_code: number; body: { error: { param: string } } };
      assert.equal(response.status_code, 400);
      assert.equal(line['error'], null);
    }
    // Which provider answered each line follows from a's replies, in the order a saw them.
    const answeredByA = new Set(a.requests.filter((_, index) => index % 2 === 1).map(contentOf));
    for (const line of output) {
      assert.match(String(line['id']), /^batch_req_/);
      assert.equal(line['error'], null);
      const response = line['response'] as { status_code: number; request_id: string; body: OpenAI.ChatCompletion };
      assert.equal(response.status_code, 200);
      assert.equal(typeof response.request_id, 'string');
      const expected = answeredByA.has(String(line['custom_id'])) ? 'from a' : 'from b';
      assert.equal(response.body.choices[0]?.message.content, expected, String(line['custom_id']));
    }
    // Exactly once: a saw every valid line once; b saw exactly the lines a refused.
    const aIds = a.requests.map(contentOf);
    assert.equal(aIds.length, 190);
    assert.equal(new Set(aIds).size, 190);
    const refusedByA = a.requests.filter((_, index) => index % 2 === 0).map(contentOf).sort();
    assert.deepEqual(b.requests.map(contentOf).sort(), refusedByA);

    const outputFile = await client.files.retrieve(done.output_file_id ?? '');
    assert.equal(outputFile.purpose, 'batch_output');
    assertSchema('OpenAIFile', outputFile);
  });

  test('cancel mid-run stops new lines and ends in cancelled with the finished lines in the output', async () => {
    for (let i = 0; i < 200; i++) a.enqueue({ delayMs: 40 });
    const input = await uploadLines(Array.from({ length: 200 }, (_, i) => chatLine(`c-${i}`)));
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' as '24h' });
    await eventually(async () => (await client.batches.retrieve(created.id)).request_counts?.completed !== undefined && ((await client.batches.retrieve(created.id)).request_counts?.completed ?? 0) >= 16, '16 lines done', { timeoutMs: 20_000 });
    const cancelling = await client.batches.cancel(created.id);
    assert.equal(cancelling.status, 'cancelling');
    assert.equal(typeof cancelling.cancelling_at, 'number');
    const done = await waitForStatus(created.id, ['cancelled']);
    assert.equal(typeof done.cancelled_at, 'number');
    const counts = done.request_counts;
    assert.ok(counts !== undefined && counts.completed + counts.failed < 200, 'lines after the cancel never ran');
    assert.equal(a.requests.length, (counts?.completed ?? 0) + (counts?.failed ?? 0), 'every request sent is accounted for');
    const output = await fileLines(done.output_file_id);
    assert.equal(output.length, counts?.completed);
    const again = await client.batches.cancel(created.id);
    assert.equal(again.status, 'cancelled');
  });

  test('a file with invalid lines fails the batch with errors naming the lines', async () => {
    const input = await uploadLines([chatLine('x'), '{"custom_id":"y","method":"POST","url":"/v1/embeddings","body":{}}', 'oops']);
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' as '24h' });
    const done = await waitForStatus(created.id, ['failed', 'completed']);
    assert.equal(done.status, 'failed');
    assert.equal(typeof done.failed_at, 'number');
    assert.deepEqual(done.errors?.data?.map((e) => [e.line, e.param]), [[2, 'url'], [3, null]]);
    assertSchema('Batch', done);
    assert.equal(a.requests.length, 0);
  });

  test('gateway files: retrieve, content, list and delete; batch lists and unknown ids', async () => {
    const input = await uploadLines([chatLine('only')]);
    const retrieved = await client.files.retrieve(input.id);
    assert.deepEqual(retrieved, input);
    assert.equal(await (await client.files.content(input.id)).text(), `${chatLine('only')}\n`);
    const page = await client.files.list({ purpose: 'batch' });
    assert.ok(page.data.some((file) => file.id === input.id));
    const batchList = await fetchJson('/batches?limit=2', { 'x-gateway-config': 'fb' });
    assertSchema('ListBatchesResponse', batchList);
    assert.ok((batchList['data'] as unknown[]).length <= 2);
    const deleted = await client.files.delete(input.id);
    assert.deepEqual(deleted, { id: input.id, object: 'file', deleted: true });
    await assert.rejects(client.files.retrieve(input.id), (error: unknown) => error instanceof OpenAI.NotFoundError);
    await assert.rejects(client.batches.retrieve('gwbatch-nope'), (error: unknown) => error instanceof OpenAI.NotFoundError);
    const wrongPurpose = await fetch(`${harness.gateway.url}/files`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': 'gw-test-key-0123456789-012345678', 'x-gateway-file-storage': 'gateway' },
      body: form('fine-tune'),
    });
    assert.equal(wrongPurpose.status, 400);
    assert.equal(((await wrongPurpose.json()) as { error: { param: string } }).error.param, 'purpose');
  });

  test('lists put gateway objects first, then the provider’s; the cursor says which list continues', async () => {
    const gatewayFile = await uploadLines([chatLine('merge')]);
    const providerFile = await harness.client({ 'x-gateway-virtual-key': 'vk-up' }).files.create({ file: await toFile(Buffer.from('p'), 'p.jsonl'), purpose: 'fine-tune' });
    const headers = { 'x-gateway-virtual-key': 'vk-up' };
    const merged = await fetchJson('/files', headers);
    assertSchema('ListFilesResponse', merged);
    const ids = (merged['data'] as Array<{ id: string }>).map((file) => file.id);
    assert.ok(ids.indexOf(gatewayFile.id) < ids.indexOf(providerFile.id));
    assert.ok(ids.every((id, index) => index === 0 || !id.startsWith('gwfile-') || ids[index - 1]?.startsWith('gwfile-')), 'gateway files come first');
    const gatewayCount = ids.filter((id) => id.startsWith('gwfile-')).length;
    const first = await fetchJson(`/files?limit=${gatewayCount}`, headers);
    assert.equal(first['has_more'], true);
    const second = await fetchJson(`/files?limit=5&after=${String(first['last_id'])}`, headers);
    assert.deepEqual((second['data'] as Array<{ id: string }>).map((f) => f.id), [providerFile.id]);
    const providerPage = await fetchJson(`/files?after=${providerFile.id}`, headers);
    assert.deepEqual(providerPage['data'], []);
    await client.files.delete(gatewayFile.id);
  });
});

async function fetchJson(path: string, headers: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(`${harness.gateway.url}${path}`, { headers: { 'x-gateway-api-key': 'gw-test-key-0123456789-012345678', ...headers } });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Record<string, unknown>;
}

function form(purpose: string): FormData {
  const body = new FormData();
  body.set('purpose', purpose);
  body.set('file', new Blob(['{}\n']), 'a.jsonl');
  return body;
}
