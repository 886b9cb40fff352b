// The request log end to end: the openai SDK → the real gateway (SQLite log store in its
// worker, batched writer) → a mock upstream; then GET /v1/logs, /v1/logs/{id} and
// /v1/analytics/summary find those requests by trace id and metadata.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { requestLogRoutes } from '../../proxy/logs/request-log-routes.ts';
import { createRequestLogWriter, type RequestLogWriter } from '../../proxy/logs/request-log-writer.ts';
import { SqliteLogStore } from '../../proxy/logs/sqlite-log-store.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const PROVIDER_KEY = 'sk-upstream-secret-for-logs-1234';
const INFERENCE_ONLY_KEY = 'gw-inference-only-logs-key-01234';
const RUN = randomUUID(); // metadata value unique to this run
const TRACE_A = `trace-a-${RUN}`;
const TRACE_B = `trace-b-${RUN}`;

let dir: string;
let mock: MockOpenAI;
let store: SqliteLogStore;
let writer: RequestLogWriter;
let harness: Harness;

interface LogEntry {
  id: string;
  object: string;
  trace_id: string;
  started_at: string;
  route: string;
  status: number;
  provider: string | null;
  model: string | null;
  api_key_id: string | null;
  metadata: Record<string, unknown>;
  usage: { prompt_tokens: number | null; completion_tokens: number | null; total_tokens: number | null };
  latency_ms: number;
  error_code: string | null;
}
interface LogList {
  object: string;
  data: LogEntry[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-request-logs-'));
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  store = await SqliteLogStore.open({ path: join(dir, 'request-logs.sqlite') });
  writer = createRequestLogWriter(store, { batchSize: 50, flushIntervalMs: 50 });
  const state = baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url }] });
  (state['apiKeys'] as unknown[]).push({ id: 'inference-only', key: INFERENCE_ONLY_KEY, scopes: ['inference'] });
  harness = await startHarness({ state, requestSink: writer.sink, plugins: [requestLogRoutes(store)] });

  const chat = async (traceId: string, metadata: Record<string, unknown>, model = 'gpt-4o-mini'): Promise<void> => {
    const client = harness.client({
      'x-gateway-virtual-key': 'mock',
      'x-gateway-trace-id': traceId,
      'x-gateway-metadata': JSON.stringify({ run: RUN, ...metadata }),
    });
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
  };
  await chat(TRACE_A, { user: 'u1', env: 'prod' });
  await chat(TRACE_A, { user: 'u1', env: 'prod' }, 'gpt-4o');
  await chat(TRACE_A, { user: 'u2', env: 'prod' });
  await chat(TRACE_B, { user: 'u1', env: 'dev' });
  await chat(TRACE_B, { user: 'u1', env: 'prod', tier: 3 });
  // One refused request (no model): recorded with its status and error code.
  const refused = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      'x-gateway-virtual-key': 'mock',
      'x-gateway-trace-id': TRACE_B,
      'x-gateway-metadata': JSON.stringify({ run: RUN, user: 'u3' }),
    },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(refused.status, 400);
  await refused.arrayBuffer();

  // Records are written after the response, in batches: flush until all six are there.
  await eventually(
    async () => {
      await writer.flush();
      return (await store.query({ metadata: { run: RUN } }, undefined, 100)).records.length === 6;
    },
    'six request records',
    { timeoutMs: 5_000 },
  );
});

after(async () => {
  await harness.close();
  await writer.close();
  await store.close();
  await mock.close();
  await rm(dir, { recursive: true, force: true });
});

async function get(path: string, key = TEST_GATEWAY_KEY): Promise<{ status: number; text: string; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}${path}`, { headers: { 'x-gateway-api-key': key } });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

async function list(query: string): Promise<LogList> {
  const { status, json } = await get(`/logs?${query}`);
  assert.equal(status, 200, JSON.stringify(json));
  return json as unknown as LogList;
}

describe('GET /v1/logs through a real gateway', () => {
  test('finds every request of a trace id, newest first, with what the gateway knew', async () => {
    const page = await list(`trace_id=${TRACE_A}`);
    assert.equal(page.object, 'list');
    assert.equal(page.data.length, 3);
    assert.equal(page.has_more, false);
    const started = page.data.map((entry) => Date.parse(entry.started_at));
    assert.deepEqual(started, [...started].sort((a, b) => b - a), 'newest first');
    assert.deepEqual(page.data.map((entry) => entry.metadata['user']).sort(), ['u1', 'u1', 'u2']);
    assert.deepEqual([page.first_id, page.last_id], [page.data[0]?.id, page.data[2]?.id]);
    for (const entry of page.data) {
      assert.equal(entry.object, 'request_log');
      assert.equal(entry.trace_id, TRACE_A);
      assert.equal(entry.route, '/v1/chat/completions');
      assert.equal(entry.status, 200);
      assert.equal(entry.provider, 'openai');
      assert.equal(entry.api_key_id, 'test');
      assert.ok(entry.latency_ms > 0);
      assert.ok((entry.usage.total_tokens ?? 0) > 0, 'the provider usage is kept');
    }
    assert.deepEqual(page.data.map((entry) => entry.model).sort(), ['gpt-4o', 'gpt-4o-mini', 'gpt-4o-mini']);
  });

  test('two metadata filters must both match', async () => {
    const page = await list(`metadata.run=${RUN}&metadata.user=u1&metadata.env=prod`);
    assert.equal(page.data.length, 3);
    assert.deepEqual(new Set(page.data.map((entry) => entry.trace_id)), new Set([TRACE_A, TRACE_B]));
    assert.equal((await list(`metadata.run=${RUN}&metadata.tier=3`)).data.length, 1, 'a number matches its text');
  });

  test('status class, model and trace id combine; the refused request carries its error code', async () => {
    const refused = await list(`trace_id=${TRACE_B}&status=4xx`);
    assert.equal(refused.data.length, 1);
    assert.equal(refused.data[0]?.status, 400);
    assert.equal(refused.data[0]?.error_code, 'AIGW_ERR_INVALID_BODY');
    assert.equal((await list(`metadata.run=${RUN}&model=gpt-4o`)).data.length, 1);
  });

  test('pages with limit and after, each record once', async () => {
    const seen: string[] = [];
    let query = `metadata.run=${RUN}&limit=4`;
    for (;;) {
      const page = await list(query);
      seen.push(...page.data.map((entry) => entry.id));
      if (!page.has_more) break;
      query = `metadata.run=${RUN}&limit=4&after=${page.last_id}`;
    }
    assert.equal(seen.length, 6);
    assert.equal(new Set(seen).size, 6);
  });

  test('GET /v1/logs/{id} returns one record; an unknown id is 404', async () => {
    const [first] = (await list(`trace_id=${TRACE_A}&limit=1`)).data;
    assert.ok(first !== undefined);
    const one = await get(`/logs/${first.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.json, first);
    const missing = await get('/logs/no-such-record');
    assert.equal(missing.status, 404);
    assert.equal((missing.json['error'] as { code: string }).code, 'AIGW_ERR_NOT_FOUND');
  });

  test('the admin scope is required: an inference-only key gets 403, no key 401', async () => {
    for (const path of ['/logs', '/logs/anything', '/analytics/summary']) {
      assert.equal((await get(path, INFERENCE_ONLY_KEY)).status, 403, path);
      const anonymous = await fetch(`${harness.gateway.url}${path}`);
      assert.equal(anonymous.status, 401, path);
      await anonymous.arrayBuffer();
    }
  });

  test('records name the API key by id only: no gateway or provider key in any answer', async () => {
    const { text } = await get(`/logs?metadata.run=${RUN}&limit=100`);
    assert.ok(!text.includes(TEST_GATEWAY_KEY));
    assert.ok(!text.includes(PROVIDER_KEY));
  });

  test('a bad query is a 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['status=boom', 'status'],
      ['from=yesterday', 'from'],
      ['traceid=x', 'traceid'],
      ['after=no-such-record', 'after'],
    ]) {
      const { status, json } = await get(`/logs?${query}`);
      assert.equal(status, 400, query);
      assert.equal((json['error'] as { param: string }).param, param, query);
    }
  });
});

describe('GET /v1/analytics/summary through a real gateway', () => {
  test('counts, errors, tokens and latency percentiles, grouped by model and by a metadata key', async () => {
    const byModel = await get(`/analytics/summary?metadata.run=${RUN}&group_by=model`);
    assert.equal(byModel.status, 200, byModel.text);
    const body = byModel.json as {
      object: string;
      group_by: string;
      total: { requests: number; errors: number; tokens: { total: number }; latency_ms: { p50: number; p95: number } };
      data: Array<{ group: string | null; requests: number }>;
    };
    assert.equal(body.object, 'analytics.summary');
    assert.equal(body.group_by, 'model');
    assert.equal(body.total.requests, 6);
    assert.equal(body.total.errors, 1);
    assert.ok(body.total.tokens.total > 0);
    assert.ok(body.total.latency_ms.p50 > 0 && body.total.latency_ms.p95 >= body.total.latency_ms.p50);
    assert.deepEqual(body.data.map((g) => [g.group, g.requests]), [['gpt-4o-mini', 4], ['gpt-4o', 1], [null, 1]]);

    const byUser = (await get(`/analytics/summary?metadata.run=${RUN}&group_by=metadata.user`)).json as { data: Array<{ group: string; requests: number }> };
    assert.deepEqual(byUser.data.map((g) => [g.group, g.requests]), [['u1', 4], ['u2', 1], ['u3', 1]]);
  });

  test('an empty range has no requests; a bad group_by is a 400', async () => {
    const empty = await get(`/analytics/summary?metadata.run=${RUN}&from=0&to=1000`);
    assert.equal((empty.json['total'] as { requests: number }).requests, 0);
    const bad = await get('/analytics/summary?group_by=user');
    assert.equal(bad.status, 400);
    assert.equal((bad.json['error'] as { param: string }).param, 'group_by');
  });
});
