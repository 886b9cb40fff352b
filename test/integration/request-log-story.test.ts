// One record per request tells the whole story: a cache HIT and the MISS that filled it carry
// the same `model` meaning (the model the provider was asked for) with the asked-for one
// beside it, a HIT names the provider whose answer it served, and a fallback with retries
// lists every attempt (target, provider, model, status, duration, error code) — in the log
// store and in GET /v1/logs.
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
import { eventually } from '../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const PROVIDER_KEY = 'sk-upstream-story-0123456789';

interface Attempt {
  target: string;
  provider: string | null;
  model: string | null;
  status: number | null;
  duration_ms: number;
  error_code: string | null;
  skipped?: string;
}
interface LogEntry {
  trace_id: string;
  status: number;
  provider: string | null;
  model: string | null;
  model_requested: string | null;
  cache_status: string | null;
  retries: number;
  target_path: string | null;
  attempts: Attempt[];
}

let dir: string;
let mock: MockOpenAI;
let store: SqliteLogStore;
let writer: RequestLogWriter;
let harness: Harness;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-log-story-'));
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  store = await SqliteLogStore.open({ path: join(dir, 'request-logs.sqlite') });
  writer = createRequestLogWriter(store, { batchSize: 50, flushIntervalMs: 20 });
  const state = baseState({
    providers: [{ slug: 'mock', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url }],
    // A provider that is gone (the operator lists it): its target is skipped, not fatal.
    unavailableProviders: ['gone'],
    configs: [
      { id: 'cached', config: { provider: '@mock', override_params: { model: 'gpt-4o' }, cache: { mode: 'simple', max_age: 60 } } },
      {
        id: 'story',
        config: {
          strategy: { mode: 'fallback' },
          targets: [
            { provider: '@mock', override_params: { model: 'first-model' }, retry: { attempts: 1, on_status_codes: [500] } },
            { provider: '@gone' },
            { provider: '@mock', override_params: { model: 'second-model' } },
          ],
        },
      },
    ],
  });
  harness = await startHarness({ state, requestSink: writer.sink, plugins: [requestLogRoutes(store)] });
});
after(async () => {
  await harness.close();
  await writer.close();
  await store.close();
  await mock.close();
  await rm(dir, { recursive: true, force: true });
});

async function chat(config: string, traceId: string): Promise<Response> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': config, 'x-gateway-trace-id': traceId },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `story ${config}` }] }),
  });
  await response.arrayBuffer();
  return response;
}

async function logsOf(traceId: string, count: number): Promise<LogEntry[]> {
  let entries: LogEntry[] = [];
  await eventually(
    async () => {
      await writer.flush();
      const response = await fetch(`${harness.gateway.url}/logs?trace_id=${encodeURIComponent(traceId)}`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
      entries = ((await response.json()) as { data: LogEntry[] }).data;
      return entries.length >= count;
    },
    `${count} log records of ${traceId}`,
    { timeoutMs: 10_000 },
  );
  return entries;
}

describe('the request log record', () => {
  test('a HIT and the MISS that filled it: same model meaning, the asked-for model beside it, the provider of the hit', async () => {
    const missTrace = `miss-${randomUUID()}`;
    const miss = await chat('cached', missTrace);
    assert.equal(miss.headers.get('x-gateway-cache-status'), 'MISS');
    const hitTrace = `hit-${randomUUID()}`;
    // The answer is stored off the response path: ask until it is there.
    await eventually(async () => (await chat('cached', hitTrace)).headers.get('x-gateway-cache-status') === 'HIT', 'a cache hit', { timeoutMs: 10_000 });

    const [missRecord] = await logsOf(missTrace, 1);
    const hitRecord = (await logsOf(hitTrace, 1)).find((entry) => entry.cache_status === 'HIT');
    assert.ok(missRecord !== undefined && hitRecord !== undefined);
    assert.deepEqual(
      { provider: missRecord.provider, model: missRecord.model, model_requested: missRecord.model_requested, cache_status: missRecord.cache_status },
      { provider: 'openai', model: 'gpt-4o', model_requested: 'gpt-4o-mini', cache_status: 'MISS' },
    );
    assert.deepEqual(
      { provider: hitRecord.provider, model: hitRecord.model, model_requested: hitRecord.model_requested },
      { provider: 'openai', model: 'gpt-4o', model_requested: 'gpt-4o-mini' },
      'a hit names what the miss named',
    );
    assert.deepEqual(hitRecord.attempts, [], 'a hit called no provider');
    assert.equal(missRecord.attempts.length, 1);
  });

  test('a fallback with retries and a skipped target: every attempt, in order', async () => {
    mock.enqueue({ status: 500, body: { error: { message: 'boom 1', type: 'server_error' } } }, { status: 500, body: { error: { message: 'boom 2', type: 'server_error' } } });
    const trace = `story-${randomUUID()}`;
    const response = await chat('story', trace);
    assert.equal(response.status, 200);
    const [record] = await logsOf(trace, 1);
    assert.ok(record !== undefined);
    assert.equal(record.status, 200);
    assert.equal(record.retries, 1);
    assert.equal(record.model, 'second-model');
    assert.equal(record.model_requested, 'gpt-4o-mini');
    assert.equal(record.target_path, 'config.targets[2]');
    assert.deepEqual(
      record.attempts.map(({ duration_ms: _duration, ...rest }) => rest),
      [
        { target: 'config.targets[0]', provider: 'openai', model: 'first-model', status: 500, error_code: null },
        { target: 'config.targets[0]', provider: 'openai', model: 'first-model', status: 500, error_code: null },
        { target: 'config.targets[1]', provider: '@gone', model: 'gpt-4o-mini', status: null, error_code: 'AIGW_ERR_UNKNOWN_PROVIDER', skipped: 'unresolved' },
        { target: 'config.targets[2]', provider: 'openai', model: 'second-model', status: 200, error_code: null },
      ],
    );
    for (const attempt of record.attempts) assert.ok(attempt.duration_ms >= 0 && Number.isFinite(attempt.duration_ms));
    // The mock saw the attempts as recorded: twice the first model, then the second.
    assert.deepEqual(
      mock.requests.slice(-3).map((request) => (request.json as { model: string }).model),
      ['first-model', 'first-model', 'second-model'],
    );
    // The log line tells the same story.
    const line = harness.logs.find((candidate) => candidate['trace_id'] === trace && candidate['msg'] === 'request');
    assert.equal((line?.['attempts'] as unknown[] | undefined)?.length, 4);
    assert.equal(line?.['model_requested'], 'gpt-4o-mini');
  });
});
