// Headers and bodies beside the request log (serve --log-bodies), off by default: credentials
// in headers are redacted, each body is kept up to a cap with its real size and a truncated
// flag, a streamed answer is copied as it is relayed, and GET /v1/logs/{id}/exchange is
// admin-only and confined to the caller's workspace like the record.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { captureBody, redactHeaders, REDACTED } from '../../../proxy/logs/exchange-capture.ts';
import { startExchangeLogging, type ExchangeLogging } from '../../../proxy/logs/exchange-logging.ts';
import { startRequestLogging, type RequestLogging } from '../../../proxy/logs/request-logging.ts';
import { createGatewayMetrics } from '../../../proxy/observability/gateway-metrics.ts';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';
import { startMockOpenAI, type MockOpenAI } from '../../fixtures/mock-openai.ts';
import { eventually } from '../../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../../helpers/gateway-harness.ts';

const PROVIDER_KEY = 'sk-exchange-upstream-secret-0123456789';
const OTHER_ADMIN = 'gw-exchange-other-workspace-admin-0123';
const CAP = 1_024;

describe('redactHeaders and captureBody', () => {
  test('credential headers are redacted whatever the provider calls them; others are kept, bounded', () => {
    const headers = redactHeaders({
      authorization: 'Bearer sk-live',
      'x-gateway-api-key': 'gw-key',
      'api-key': 'azure',
      'x-api-key': 'anthropic',
      'x-goog-api-key': 'google',
      cookie: 'session=1',
      'x-amz-security-token': 'aws',
      'x-gateway-config': '{"provider":"openai","api_key":"sk-inline"}',
      'x-gateway-metadata': '{"team":"search"}',
      'content-type': 'application/json',
      'x-long': 'y'.repeat(5_000),
    });
    for (const name of ['authorization', 'x-gateway-api-key', 'api-key', 'x-api-key', 'x-goog-api-key', 'cookie', 'x-amz-security-token', 'x-gateway-config']) {
      assert.equal(headers[name], REDACTED, name);
    }
    assert.equal(headers['x-gateway-metadata'], '{"team":"search"}');
    assert.equal(headers['content-type'], 'application/json');
    assert.ok((headers['x-long'] ?? '').length <= 1_025);
    assert.equal(redactHeaders({ 'x-gateway-config': '{"strategy":{"mode":"fallback"}}' })['x-gateway-config'], '{"strategy":{"mode":"fallback"}}');
    assert.equal(Object.keys(redactHeaders(Object.fromEntries(Array.from({ length: 500 }, (_, index) => [`x-h-${index}`, 'v'])))).length, 100);
  });

  test('a body over the cap is cut there, with its whole size and the truncated flag', () => {
    assert.deepEqual(captureBody('hello', 10), { text: 'hello', bytes: 5, truncated: false });
    assert.deepEqual(captureBody(Buffer.from('x'.repeat(20)), 10), { text: 'x'.repeat(10), bytes: 20, truncated: true });
  });
});

describe('GET /v1/logs/{id}/exchange', () => {
  let dir: string;
  let mock: MockOpenAI;
  let logging: RequestLogging | undefined;
  let exchanges: ExchangeLogging;
  let harness: Harness;
  let plain: Harness;
  const seen: RequestRecord[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigw-exchange-'));
    mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
    logging = await startRequestLogging({ kind: 'sqlite', dataDir: dir, retentionDays: 1, metrics: createGatewayMetrics(), logger: pino({ level: 'silent' }) });
    assert.ok(logging !== undefined);
    await logging.ready;
    exchanges = await startExchangeLogging({ kind: 'sqlite', dataDir: dir, retentionDays: 1, maxBodyBytes: CAP, logger: pino({ level: 'silent' }) });
    const store = logging.store;
    const sink = logging.sink;
    const state = baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url }], models: [{ name: 'gpt-4o-mini', target: '@mock' }] });
    state['apiKeys'] = [...(state['apiKeys'] as unknown[]), { id: 'other-admin', key: OTHER_ADMIN, workspace: 'team-b', scopes: ['admin'] }];
    harness = await startHarness({
      state,
      requestSink: exchanges.wrapSink((record) => {
        seen.push(record);
        sink(record);
      }),
      plugins: [logging.routes, exchanges.capture, exchanges.routes(store)],
    });
    plain = await startHarness({ state, requestSink: sink, plugins: [logging.routes] });
  });

  after(async () => {
    await harness?.close();
    await plain?.close();
    await exchanges?.close();
    await logging?.close();
    await mock?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const chat = async (target: Harness, body: Record<string, unknown>, trace: string): Promise<string> => {
    const response = await fetch(`${target.gateway.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, authorization: `Bearer ${PROVIDER_KEY}`, 'x-gateway-trace-id': trace, 'x-gateway-metadata': '{"team":"search"}' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }], ...body }),
    });
    assert.equal(response.status, 200);
    return response.text();
  };
  const idOf = async (trace: string): Promise<string> =>
    eventually(async () => {
      const response = await fetch(`${harness.gateway.url}/logs?trace_id=${trace}`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
      return ((await response.json()) as { data: Array<{ id: string }> }).data[0]?.id;
    }, `the record of ${trace}`);
  const exchangeOf = async (id: string, key = TEST_GATEWAY_KEY): Promise<{ status: number; json: Record<string, any> }> => {
    const response = await fetch(`${harness.gateway.url}/logs/${id}/exchange`, { headers: { 'x-gateway-api-key': key } });
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };

  test('a plain answer: request headers redacted, both bodies kept; the record itself goes to the log without them', async () => {
    const answer = await chat(harness, {}, 'trace-exchange-plain');
    const id = await idOf('trace-exchange-plain');
    const { status, json } = await eventually(async () => {
      const result = await exchangeOf(id);
      return result.status === 200 ? result : undefined;
    }, 'the exchange written');
    assert.equal(status, 200);
    assert.equal(json['request'].headers['x-gateway-api-key'], REDACTED);
    assert.equal(json['request'].headers['authorization'], REDACTED);
    assert.equal(json['request'].headers['x-gateway-metadata'], '{"team":"search"}');
    assert.match(json['request'].body.text, /hello there/);
    assert.equal(json['request'].body.truncated, false);
    assert.equal(json['response'].body.text, answer);
    assert.match(json['response'].headers['content-type'], /application\/json/);
    assert.ok(!JSON.stringify(json).includes(PROVIDER_KEY) && !JSON.stringify(json).includes(TEST_GATEWAY_KEY), 'no key in the exchange');
    assert.ok(seen.every((record) => record.exchange === undefined), 'the log store never receives the exchange');
  });

  test('a streamed answer is copied as it is relayed, cut at the cap with its whole size', async () => {
    const text = await chat(harness, { stream: true, max_tokens: 500, messages: [{ role: 'user', content: 'x'.repeat(3 * CAP) }] }, 'trace-exchange-stream');
    assert.match(text, /data: \[DONE\]/);
    const id = await idOf('trace-exchange-stream');
    const { json } = await eventually(async () => {
      const result = await exchangeOf(id);
      return result.status === 200 ? result : undefined;
    }, 'the exchange written');
    assert.equal(json['request'].body.truncated, true);
    assert.ok(json['request'].body.bytes > 3 * CAP);
    assert.equal(Buffer.byteLength(json['request'].body.text), CAP);
    const body = json['response'].body;
    assert.equal(body.bytes, Buffer.byteLength(text));
    assert.equal(body.truncated, Buffer.byteLength(text) > CAP);
    assert.ok(text.startsWith(body.text.slice(0, 200)), 'the first bytes relayed');
  });

  test("another workspace's admin gets 404; without --log-bodies the route does not exist and nothing is captured", async () => {
    const id = await idOf('trace-exchange-plain');
    assert.equal((await exchangeOf(id, OTHER_ADMIN)).status, 404);
    await chat(plain, {}, 'trace-exchange-off');
    const response = await fetch(`${plain.gateway.url}/logs/${id}/exchange`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    assert.equal(response.status, 404);
    // The configuration tells the console whether to ask.
    const bodies = async (target: Harness): Promise<unknown> =>
      ((await (await fetch(`${target.gateway.url}/configuration`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } })).json()) as { request_log: { bodies: boolean } }).request_log.bodies;
    assert.equal(await bodies(harness), true);
    assert.equal(await bodies(plain), false);
  });
});
