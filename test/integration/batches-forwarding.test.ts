// Batches, files and fine-tuning forwarded to the provider: the official openai SDK (and
// raw fetch for the edges) → gateway → a mock of OpenAI's batch/files/fine-tuning API.
// Every route, the validation failures, the provider-identification requirement, and the
// relayed shapes checked against the spec and OpenAI's published schemas.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { openapiAvailable, schemaProblems } from '../batches/openapi-shapes.ts';
import { startMockOpenAIBatches, type MockOpenAIBatches } from '../fixtures/mock-openai-batches.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAIBatches;
let harness: Harness;
let dataDir: string;
let client: OpenAI;
const VK = { 'x-gateway-virtual-key': 'vk-up' };

before(async () => {
  mock = await startMockOpenAIBatches({ apiKey: 'sk-up' });
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-batches-fwd-'));
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: mock.url },
        { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant' },
        { slug: 'az', provider: 'azure-openai', apiKey: 'sk-up', customHost: mock.origin, options: { apiVersion: '2024-10-21', deploymentId: 'gpt4o' } },
      ],
    }),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') } })],
  });
  client = harness.client(VK);
});

after(async () => {
  await harness.close();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

beforeEach(() => mock.reset());

function assertSchema(name: string, value: unknown): void {
  if (!openapiAvailable) return;
  assert.deepEqual(schemaProblems(name, value), [], `${name} shape`);
}

async function call(method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}) {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: {
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: response.status, json, text, headers: response.headers };
}

function errorOf(json: Record<string, unknown>): { message: string; param: string | null; type: string; code: string | null } {
  return json['error'] as { message: string; param: string | null; type: string; code: string | null };
}

async function seedFile(content = '{"custom_id":"a"}\n'): Promise<OpenAI.FileObject> {
  return client.files.create({ file: await toFile(Buffer.from(content), 'input.jsonl'), purpose: 'batch' });
}

describe('files', () => {
  test('an upload streams through unchanged; the file object has the OpenAI shape', async () => {
    const content = `${'{"custom_id":"x","method":"POST"}\n'.repeat(2000)}`;
    const file = await seedFile(content);
    assert.match(file.id, /^file-/);
    assertSchema('OpenAIFile', file);
    const upload = mock.calls.find((c) => c.method === 'POST' && c.path === '/files');
    assert.ok(upload !== undefined);
    assert.equal(upload.headers['authorization'], 'Bearer sk-up');
    assert.equal(upload.headers['x-gateway-api-key'], undefined, 'the gateway key never leaves');
    assert.match(upload.headers['content-type'] ?? '', /^multipart\/form-data; boundary=/);
    assert.equal(mock.files.get(file.id)?.content.toString(), content);
  });

  test('list, retrieve, content and delete are forwarded; shapes match ListFilesResponse and DeleteFileResponse', async () => {
    const first = await seedFile('one\n');
    const second = await seedFile('two\n');
    const page = await call('GET', '/files?limit=1', { headers: VK });
    assert.equal(page.status, 200);
    assertSchema('ListFilesResponse', page.json);
    assert.deepEqual((page.json['data'] as Array<{ id: string }>).map((f) => f.id), [second.id]);
    assert.equal(page.json['has_more'], true);
    const next = await call('GET', `/files?limit=1&after=${second.id}`, { headers: VK });
    assert.deepEqual((next.json['data'] as Array<{ id: string }>).map((f) => f.id), [first.id]);
    assert.equal(mock.calls.at(-1)?.query.get('after'), second.id);
    const retrieved = await client.files.retrieve(first.id);
    assert.equal(retrieved.id, first.id);
    assertSchema('OpenAIFile', retrieved);
    const content = await client.files.content(first.id);
    assert.equal(await content.text(), 'one\n');
    const deleted = await client.files.delete(first.id);
    assert.deepEqual(deleted, { id: first.id, object: 'file', deleted: true });
    assertSchema('DeleteFileResponse', deleted);
    const missing = await call('GET', `/files/${first.id}`, { headers: VK });
    assert.equal(missing.status, 404);
    assert.match(errorOf(missing.json).message, /No such File object/);
  });

  test('a non-multipart upload is refused before reaching the provider', async () => {
    const result = await call('POST', '/files', { headers: VK, body: { purpose: 'batch' } });
    assert.equal(result.status, 415);
    assert.equal(errorOf(result.json).param, 'content-type');
    assert.equal(mock.calls.length, 0);
  });
});

describe('batches', () => {
  test('create (24h), retrieve, list and cancel are forwarded; shapes match Batch and ListBatchesResponse', async () => {
    const file = await seedFile();
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { team: 'a' } });
    assert.match(batch.id, /^batch_/);
    assert.equal(batch.status, 'validating');
    assertSchema('Batch', batch);
    const sent = mock.calls.find((c) => c.path === '/batches' && c.method === 'POST');
    assert.deepEqual(JSON.parse(sent?.body.toString() ?? '{}'), { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { team: 'a' } });
    assert.equal((await client.batches.retrieve(batch.id)).id, batch.id);
    const list = await call('GET', '/batches', { headers: VK });
    assert.equal(list.status, 200);
    assertSchema('ListBatchesResponse', list.json);
    assert.equal(list.json['object'], 'list');
    assert.equal(list.json['first_id'], batch.id);
    assert.equal(mock.calls.at(-1)?.query.get('limit'), '20', 'default limit 20');
    const cancelled = await client.batches.cancel(batch.id);
    assert.equal(cancelled.status, 'cancelling');
    assert.equal(typeof cancelled.cancelling_at, 'number');
    assertSchema('Batch', cancelled);
    const unknown = await call('GET', '/batches/batch_nope', { headers: VK });
    assert.equal(unknown.status, 404);
  });

  test('list passes limit and after through; limit outside 1–100 is a 400 naming limit', async () => {
    const ok = await call('GET', '/batches?limit=100&after=batch_x', { headers: VK });
    assert.equal(ok.status, 200);
    assert.equal(mock.calls.at(-1)?.query.get('limit'), '100');
    assert.equal(mock.calls.at(-1)?.query.get('after'), 'batch_x');
    for (const limit of ['0', '101', 'ten', '2.5']) {
      const result = await call('GET', `/batches?limit=${limit}`, { headers: VK });
      assert.equal(result.status, 400, limit);
      assert.equal(errorOf(result.json).param, 'limit');
    }
  });

  const invalidBodies: Array<[string, Record<string, unknown>, string]> = [
    ['input_file_id missing', { endpoint: '/v1/chat/completions', completion_window: '24h' }, 'input_file_id'],
    ['endpoint missing', { input_file_id: 'file-1', completion_window: '24h' }, 'endpoint'],
    ['endpoint not allowed', { input_file_id: 'file-1', endpoint: '/v1/responses', completion_window: '24h' }, 'endpoint'],
    ['completion_window missing', { input_file_id: 'file-1', endpoint: '/v1/embeddings' }, 'completion_window'],
    ['completion_window not allowed', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '48h' }, 'completion_window'],
    ['metadata not an object', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h', metadata: 'x' }, 'metadata'],
    ['metadata with 17 pairs', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
    ['metadata key of 65 characters', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h', metadata: { ['k'.repeat(65)]: 'v' } }, `metadata.${'k'.repeat(65)}`],
    ['metadata value of 513 characters', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h', metadata: { k: 'v'.repeat(513) } }, 'metadata.k'],
    ['a gateway file with 24h', { input_file_id: 'gwfile-abc', endpoint: '/v1/embeddings', completion_window: '24h' }, 'input_file_id'],
    ['a provider file with immediate', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: 'immediate' }, 'input_file_id'],
  ];
  for (const [name, body, param] of invalidBodies) {
    test(`create: ${name} → 400 naming ${param.slice(0, 20)}`, async () => {
      const result = await call('POST', '/batches', { headers: VK, body });
      assert.equal(result.status, 400);
      assert.equal(errorOf(result.json).type, 'invalid_request_error');
      assert.equal(errorOf(result.json).param, param);
      assert.equal(mock.calls.length, 0);
    });
  }

  test('metadata at the limits (16 pairs, 64/512 characters) is accepted', async () => {
    const file = await seedFile();
    const metadata = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`${i}`.padEnd(64, 'k'), 'v'.repeat(512)]));
    const result = await call('POST', '/batches', { headers: VK, body: { input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h', metadata } });
    assert.equal(result.status, 200);
  });
});

describe('fine-tuning jobs', () => {
  const VALID = { model: 'gpt-4o-mini', training_file: 'file-train', suffix: 'support', method: { type: 'supervised' as const, supervised: { hyperparameters: { n_epochs: 2 } } } };

  test('create, retrieve, list, cancel and checkpoints are forwarded; shapes match the spec and OpenAI', async () => {
    const job = await client.fineTuning.jobs.create(VALID);
    assert.equal(job.object, 'fine_tuning.job');
    assertSchema('FineTuningJob', job);
    for (const field of ['id', 'created_at', 'error', 'fine_tuned_model', 'finished_at', 'hyperparameters', 'model', 'object', 'organization_id', 'result_files', 'status', 'trained_tokens', 'training_file', 'validation_file', 'seed']) {
      assert.ok(field in job, `spec: fine-tuning job has ${field}`);
    }
    assert.deepEqual(JSON.parse(mock.calls.at(-1)?.body.toString() ?? '{}'), VALID);
    assert.equal((await client.fineTuning.jobs.retrieve(job.id)).id, job.id);
    const list = await call('GET', '/fine_tuning/jobs', { headers: VK });
    assertSchema('ListPaginatedFineTuningJobsResponse', list.json);
    assert.equal(mock.calls.at(-1)?.query.get('limit'), '20', 'default limit 20');
    assert.deepEqual(Object.keys(list.json).sort(), ['data', 'has_more', 'object']);
    const cancelled = await client.fineTuning.jobs.cancel(job.id);
    assert.equal(cancelled.status, 'cancelled');
    mock.addCheckpoints(job.id, 3);
    const checkpoints = await call('GET', `/fine_tuning/jobs/${job.id}/checkpoints`, { headers: VK });
    assert.equal(mock.calls.at(-1)?.query.get('limit'), '10', 'default limit 10');
    assertSchema('ListFineTuningJobCheckpointsResponse', checkpoints.json);
    const data = checkpoints.json['data'] as Array<Record<string, unknown>>;
    assert.equal(data.length, 3);
    for (const checkpoint of data) assertSchema('FineTuningJobCheckpoint', checkpoint);
    const pageTwo = await call('GET', `/fine_tuning/jobs/${job.id}/checkpoints?limit=1&after=${String(data[0]?.['id'])}`, { headers: VK });
    assert.deepEqual((pageTwo.json['data'] as Array<{ id: string }>).map((c) => c.id), [data[1]?.['id']]);
    assert.equal(pageTwo.json['has_more'], true);
    const missing = await call('GET', '/fine_tuning/jobs/ftjob-nope', { headers: VK });
    assert.equal(missing.status, 404);
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['model missing', { ...VALID, model: undefined }, 'model'],
    ['training_file missing', { ...VALID, training_file: undefined }, 'training_file'],
    ['suffix missing', { ...VALID, suffix: undefined }, 'suffix'],
    ['suffix over 64 characters', { ...VALID, suffix: 's'.repeat(65) }, 'suffix'],
    ['method missing', { ...VALID, method: undefined }, 'method'],
    ['method not an object', { ...VALID, method: 'supervised' }, 'method'],
    ['method.type unknown', { ...VALID, method: { type: 'magic' } }, 'method.type'],
    ['six integrations', { ...VALID, integrations: Array.from({ length: 6 }, () => ({ type: 'wandb', wandb: { project: 'p' } })) }, 'integrations'],
    ['validation_file not a string', { ...VALID, validation_file: 7 }, 'validation_file'],
  ];
  for (const [name, body, param] of invalid) {
    test(`create: ${name} → 400 naming ${param}`, async () => {
      const result = await call('POST', '/fine_tuning/jobs', { headers: VK, body: JSON.parse(JSON.stringify(body)) });
      assert.equal(result.status, 400);
      assert.equal(errorOf(result.json).param, param);
      assert.equal(mock.calls.length, 0);
    });
  }

  test('list limits are validated', async () => {
    for (const path of ['/fine_tuning/jobs?limit=0', '/fine_tuning/jobs/ftjob-1/checkpoints?limit=101']) {
      const result = await call('GET', path, { headers: VK });
      assert.equal(result.status, 400, path);
      assert.equal(errorOf(result.json).param, 'limit');
    }
  });
});

describe('provider identification', () => {
  const ROUTES: Array<[string, string, unknown?]> = [
    ['POST', '/batches', { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h' }],
    ['GET', '/batches'],
    ['GET', '/batches/batch_1'],
    ['POST', '/batches/batch_1/cancel'],
    ['GET', '/files'],
    ['GET', '/files/file-1'],
    ['GET', '/files/file-1/content'],
    ['DELETE', '/files/file-1'],
    ['POST', '/fine_tuning/jobs', { model: 'm', training_file: 'f', suffix: 's', method: {} }],
    ['GET', '/fine_tuning/jobs'],
    ['GET', '/fine_tuning/jobs/ftjob-1'],
    ['POST', '/fine_tuning/jobs/ftjob-1/cancel'],
    ['GET', '/fine_tuning/jobs/ftjob-1/checkpoints'],
  ];

  test('every route without a provider answers 400 naming x-gateway-virtual-key', async () => {
    for (const [method, path, body] of ROUTES) {
      const result = await call(method, path, { body });
      assert.equal(result.status, 400, `${method} ${path}`);
      assert.equal(errorOf(result.json).param, 'x-gateway-virtual-key', `${method} ${path}`);
    }
    const upload = await fetch(`${harness.gateway.url}/files`, { method: 'POST', headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY }, body: multipartBody() });
    assert.equal(upload.status, 400);
    assert.equal(((await upload.json()) as { error: { param: string } }).error.param, 'x-gateway-virtual-key');
    assert.equal(mock.calls.length, 0);
  });

  test('every route without x-gateway-api-key answers 401', async () => {
    for (const [method, path] of ROUTES) {
      const response = await fetch(`${harness.gateway.url}${path}`, { method, headers: VK });
      assert.equal(response.status, 401, `${method} ${path}`);
    }
  });

  test('an @slug provider is accepted', async () => {
    const result = await call('GET', '/fine_tuning/jobs', { headers: { 'x-gateway-provider': '@up' } });
    assert.equal(result.status, 200);
    assert.equal(result.headers.get('x-gateway-provider'), 'openai');
  });

  test('a provider without these APIs is a 400 naming provider and endpoint', async () => {
    const result = await call('GET', '/batches/batch_1', { headers: { 'x-gateway-provider': '@claude' } });
    assert.equal(result.status, 400);
    assert.match(errorOf(result.json).message, /anthropic.*\/v1\/batches\/\{batch_id\}/);
    assert.equal(errorOf(result.json).param, 'x-gateway-provider');
  });

  test('a strategy config cannot pick one provider to forward to', async () => {
    const config = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@up' }, { provider: '@up' }] });
    const result = await call('GET', '/files/file-1', { headers: { 'x-gateway-config': config } });
    assert.equal(result.status, 400);
    assert.equal(errorOf(result.json).param, 'x-gateway-config');
  });

  test('azure-openai: the api-version path and the api-key header', async () => {
    const file = await seedFile();
    const result = await call('POST', '/batches', {
      headers: { 'x-gateway-provider': '@az' },
      body: { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
    });
    assert.equal(result.status, 200);
    const sent = mock.calls.at(-1);
    assert.equal(sent?.url, '/openai/batches?api-version=2024-10-21');
    assert.equal(sent?.headers['api-key'], 'sk-up');
    assert.equal(sent?.headers['authorization'], undefined);
  });
});

function multipartBody(): FormData {
  const form = new FormData();
  form.set('purpose', 'batch');
  form.set('file', new Blob(['{}\n']), 'a.jsonl');
  return form;
}
