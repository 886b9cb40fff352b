// Issue 25, "Policies apply to what a request resolves to", on /v1/files and /v1/batches:
// request-count policies count every call (upload, list, retrieve, content, delete; create,
// list, retrieve, cancel), forwarded to the provider or answered from the gateway's store; past
// the limit the call is a 429 in OpenAI's shape and never reaches the provider; a policy owned
// by another workspace does not throttle.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { startMockOpenAIBatches, type MockOpenAIBatches } from '../fixtures/mock-openai-batches.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';

const VK = { 'x-gateway-virtual-key': 'vk-up' };
const OTHER_KEY = 'gw-other-workspace-key-0123456789';

/** One key per case (the policy counts per key): `gw-case-<name>` padded to a valid length. */
function keyOf(name: string): string {
  return `gw-case-${name}-`.padEnd(40, '0');
}

const CASES = [
  'upload',
  'upload-gateway',
  'list',
  'retrieve',
  'content',
  'delete',
  'retrieve-gateway',
  'batch-create',
  'batch-list',
  'batch-retrieve',
  'batch-cancel',
] as const;

let mock: MockOpenAIBatches;
let harness: Harness;
let dataDir: string;

before(async () => {
  mock = await startMockOpenAIBatches({ apiKey: 'sk-up' });
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-policy-files-'));
  const state = baseState({
    providers: [{ slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: mock.url }],
    rateLimitPolicies: [
      // Owned by team-a, matched on the resolved provider where the call has one.
      { id: 'team-a-three', type: 'requests', unit: 'rpm', value: 3, workspace_id: 'team-a', conditions: [{ key: 'workspace_id', value: 'team-a' }], group_by: [{ key: 'api_key' }] },
    ],
  });
  const keys = state['apiKeys'] as unknown[];
  for (const name of CASES) keys.push({ id: name, key: keyOf(name), workspace: 'team-a' });
  keys.push({ id: 'other', key: OTHER_KEY, workspace: 'team-b' });
  harness = await startHarness({ state, plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') } })] });
});

after(async () => {
  await harness.close();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

type Call = { status: number; json: Record<string, unknown> };

async function call(key: string, method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; form?: FormData } = {}): Promise<Call> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: {
      'x-gateway-api-key': key,
      ...VK,
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    body: options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // a file's content
  }
  return { status: response.status, json };
}

function form(content = '{"custom_id":"a"}\n'): FormData {
  const data = new FormData();
  data.append('purpose', 'batch');
  data.append('file', new Blob([content]), 'input.jsonl');
  return data;
}

/** A provider file and batch to read, made with the key of another workspace (not throttled). */
async function providerObjects(): Promise<{ fileId: string; batchId: string }> {
  const file = await call(OTHER_KEY, 'POST', '/files', { form: form() });
  assert.equal(file.status, 200, JSON.stringify(file.json));
  const batch = await call(OTHER_KEY, 'POST', '/batches', { body: { input_file_id: file.json['id'], endpoint: '/v1/chat/completions', completion_window: '24h' } });
  assert.equal(batch.status, 200, JSON.stringify(batch.json));
  return { fileId: file.json['id'] as string, batchId: batch.json['id'] as string };
}

/** Four calls: the 4th is the policy's 429 in OpenAI's shape. */
async function fourCalls(send: () => Promise<Call>): Promise<Call[]> {
  const calls: Call[] = [];
  for (let i = 0; i < 4; i++) calls.push(await send());
  for (const earlier of calls.slice(0, 3)) assert.notEqual(earlier.status, 429, JSON.stringify(earlier.json));
  const last = calls[3]!;
  assert.equal(last.status, 429, JSON.stringify(last.json));
  const error = last.json['error'] as Record<string, unknown>;
  assert.equal(error['code'], 'AIGW_ERR_RATE_LIMITED');
  assert.equal(typeof error['message'], 'string');
  assert.ok('type' in error && 'param' in error, 'OpenAI error shape');
  return calls;
}

function upstreamCalls(method: string, path: RegExp, since: number): number {
  return mock.calls.slice(since).filter((c) => c.method === method && path.test(c.path)).length;
}

describe('files routes count under a 3-per-minute request policy', () => {
  test('provider upload: the 4th is a 429 and the provider sees 3', async () => {
    const since = mock.calls.length;
    await fourCalls(() => call(keyOf('upload'), 'POST', '/files', { form: form() }));
    assert.equal(upstreamCalls('POST', /^\/files$/, since), 3);
  });

  test('gateway-kept upload and retrieve count too', async () => {
    const uploads = await fourCalls(() => call(keyOf('upload-gateway'), 'POST', '/files', { form: form(), headers: { 'x-gateway-file-storage': 'gateway' } }));
    const kept = await call(keyOf('retrieve-gateway'), 'POST', '/files', { form: form(), headers: { 'x-gateway-file-storage': 'gateway' } });
    assert.match(String(kept.json['id']), /^gwfile-/);
    assert.match(String(uploads[0]!.json['id']), /^gwfile-/);
    // One call spent on the upload: the 3rd retrieve is the 429.
    const retrieves: number[] = [];
    for (let i = 0; i < 3; i++) retrieves.push((await call(keyOf('retrieve-gateway'), 'GET', `/files/${String(kept.json['id'])}`)).status);
    assert.deepEqual(retrieves, [200, 200, 429]);
  });

  test('list, retrieve, content and delete: the 4th is a 429 and the provider sees 3', async () => {
    const { fileId } = await providerObjects();
    const routes: Array<[string, string, string, RegExp]> = [
      ['list', 'GET', '/files', /^\/files$/],
      ['retrieve', 'GET', `/files/${fileId}`, /^\/files\/[^/]+$/],
      ['content', 'GET', `/files/${fileId}/content`, /^\/files\/[^/]+\/content$/],
      ['delete', 'DELETE', `/files/${fileId}`, /^\/files\/[^/]+$/],
    ];
    for (const [name, method, path, upstream] of routes) {
      const since = mock.calls.length;
      await fourCalls(() => call(keyOf(name), method, path));
      assert.equal(upstreamCalls(method, upstream, since), 3, name);
    }
  });
});

describe('batches routes count under a 3-per-minute request policy', () => {
  test('create, list, retrieve and cancel: the 4th is a 429 and the provider sees 3', async () => {
    const { fileId, batchId } = await providerObjects();
    const routes: Array<[string, string, string, RegExp, unknown]> = [
      ['batch-create', 'POST', '/batches', /^\/batches$/, { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }],
      ['batch-list', 'GET', '/batches', /^\/batches$/, undefined],
      ['batch-retrieve', 'GET', `/batches/${batchId}`, /^\/batches\/[^/]+$/, undefined],
      ['batch-cancel', 'POST', `/batches/${batchId}/cancel`, /^\/batches\/[^/]+\/cancel$/, undefined],
    ];
    for (const [name, method, path, upstream, body] of routes) {
      const since = mock.calls.length;
      await fourCalls(() => call(keyOf(name), method, path, { body }));
      assert.equal(upstreamCalls(method, upstream, since), 3, name);
    }
  });
});

describe("a policy of another workspace doesn't throttle", () => {
  test('team-b makes 6 calls to each of files and batches through team-a’s 3-per-minute policy', async () => {
    const { fileId } = await providerObjects();
    const files: number[] = [];
    const batches: number[] = [];
    for (let i = 0; i < 6; i++) files.push((await call(OTHER_KEY, 'GET', `/files/${fileId}`)).status);
    for (let i = 0; i < 6; i++) batches.push((await call(OTHER_KEY, 'GET', '/batches')).status);
    assert.deepEqual(files, [200, 200, 200, 200, 200, 200]);
    assert.deepEqual(batches, [200, 200, 200, 200, 200, 200]);
  });
});
