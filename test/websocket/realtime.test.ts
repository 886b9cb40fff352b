// /v1/realtime relayed over WebSocket: a realtime client (ws) → the real gateway → a mock
// OpenAI realtime upstream speaking its event format. Admission before the upgrade, the
// provider's key upstream, usage from every response.done accounted, charged and recorded.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { calcPrice } from '@pydantic/genai-prices';
import { startMockRealtime, DEFAULT_REALTIME_USAGE, type MockRealtime } from '../fixtures/mock-openai-realtime.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { closed, connect, isRefusal, open, recorder, wsUrl } from './ws-client.ts';

const PROVIDER_KEY = 'sk-realtime-provider-key-5678';
const MODEL = 'gpt-4o-realtime-preview';

let mock: MockRealtime;
let harness: Harness;
const records: RequestRecord[] = [];

function state(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return baseState({
    providers: [
      { slug: 'rt', provider: 'openai', virtualKey: 'vk-rt', apiKey: PROVIDER_KEY, customHost: mock.url },
      { slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: 'sk-ant-x', customHost: mock.url },
      {
        slug: 'azure-dated',
        provider: 'azure-openai',
        apiKey: PROVIDER_KEY,
        customHost: mock.origin,
        options: { resourceName: 'contoso', deployments: [{ deploymentId: 'rt-prod', alias: 'gpt-realtime', apiVersion: '2025-04-01-preview', isDefault: true }] },
      },
      { slug: 'azure-v1', provider: 'azure-openai', apiKey: PROVIDER_KEY, customHost: mock.origin, options: { resourceName: 'contoso', deploymentId: 'rt-v1' } },
    ],
    configs: [
      { id: 'rt', config: { provider: '@rt' } },
      { id: 'claude', config: { provider: '@claude' } },
      { id: 'azure-dated', config: { provider: '@azure-dated' } },
      { id: 'azure-v1', config: { provider: '@azure-v1' } },
      { id: 'rt-guarded', config: { provider: '@rt', input_guardrails: [{ id: 'words', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] } },
    ],
    ...extra,
  });
}

before(async () => {
  mock = await startMockRealtime({ apiKey: PROVIDER_KEY });
  harness = await startHarness({ state: state(), requestSink: (record) => records.push(record), websocket: { maxMessageBytes: 32 * 1024 } });
});

after(async () => {
  await harness.close();
  await mock.close();
});

beforeEach(() => {
  records.length = 0;
  mock.upgrades.length = 0;
  mock.received.length = 0;
  mock.setUsage(DEFAULT_REALTIME_USAGE);
  mock.refuseWith(undefined);
});

/** Writes the state and waits until the gateway serves it. */
async function reload(next: Record<string, unknown>): Promise<void> {
  const reloads = (): number => harness.logs.filter((line) => line['msg'] === 'state reloaded').length;
  const seen = reloads();
  await harness.writeState(next);
  await eventually(() => reloads() > seen, 'the state reloaded');
}

const url = (model = MODEL): string => wsUrl(harness.gateway.url, `/v1/realtime?model=${model}`);
const HEADERS = { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-config': 'rt', 'openai-beta': 'realtime=v1' };

describe('/v1/realtime relay', () => {
  test('events relayed both ways with the provider key; every response.done accounted in the session record', async () => {
    const socket = await open(url(), { headers: HEADERS });
    const events = recorder(socket);
    await events.until('session.created');
    socket.send(JSON.stringify({ type: 'session.update', session: { instructions: 'be brief' } }));
    await events.until('session.updated');
    socket.send(JSON.stringify({ type: 'response.create' }));
    socket.send(JSON.stringify({ type: 'response.create' }));
    await events.until('response.done', 2);
    const upgrade = mock.upgrades[0];
    assert.equal(upgrade?.path, `/v1/realtime?model=${MODEL}`);
    assert.equal(upgrade?.headers['authorization'], `Bearer ${PROVIDER_KEY}`);
    assert.equal(upgrade?.headers['openai-beta'], 'realtime=v1');
    assert.ok(!JSON.stringify(upgrade?.headers).includes(TEST_GATEWAY_KEY), 'the gateway key never goes upstream');
    socket.close(1000, 'done');
    const record = await eventually(() => records.find((r) => r.route === '/v1/realtime'), 'the session record');
    assert.equal(record.status, 101);
    assert.equal(record.method, 'GET');
    assert.equal(record.promptTokens, 200);
    assert.equal(record.completionTokens, 100);
    assert.equal(record.cachedTokens, 80);
    assert.equal(record.provider, 'openai');
    // Audio at the model's audio rates, as the price table's own calculation has it.
    const price = calcPrice({ input_tokens: 100, output_tokens: 50, cache_read_tokens: 40, input_audio_tokens: 40, cache_audio_read_tokens: 20, output_audio_tokens: 40 }, MODEL, { providerId: 'openai' });
    assert.ok(price !== null && record.costUsd !== undefined);
    assert.ok(Math.abs(record.costUsd - 2 * price.total_price) < 1e-12, `${record.costUsd} is two responses at audio rates (${2 * price.total_price})`);
    const line = await eventually(() => harness.logs.find((l) => l['msg'] === 'realtime session ended'), 'the session log line');
    const { cost_usd: loggedCost, ...counts } = line['realtime'] as Record<string, number>;
    assert.deepEqual(counts, { responses: 2, input_tokens: 200, output_tokens: 100, cached_tokens: 80, audio_input_tokens: 80, cached_audio_tokens: 40, audio_output_tokens: 80 });
    assert.ok(Math.abs((loggedCost ?? 0) - record.costUsd) < 1e-12);
  });

  test('Azure OpenAI realtime: the deployment named the way each API version wants it, the key as api-key', async () => {
    for (const [config, path] of [
      ['azure-dated', '/openai/realtime?api-version=2025-04-01-preview&deployment=rt-prod'],
      ['azure-v1', '/openai/v1/realtime?model=rt-v1'],
    ] as const) {
      mock.upgrades.length = 0;
      const socket = await open(url('gpt-realtime'), { headers: { ...HEADERS, 'x-gateway-config': config } });
      const events = recorder(socket);
      socket.send(JSON.stringify({ type: 'response.create' }));
      await events.until('response.done');
      assert.equal(mock.upgrades[0]?.path, path);
      assert.equal(mock.upgrades[0]?.headers['api-key'], PROVIDER_KEY);
      socket.close();
    }
  });

  test('token limits are charged at each response.done, while the session is open', async () => {
    await reload(state({ rateLimitPolicies: [{ id: 'rt-tokens', type: 'tokens', unit: 'rpm', value: 250, conditions: [{ key: 'metadata.t', value: 'rt' }], group_by: [{ key: 'api_key' }] }] }));
    const headers = { ...HEADERS, 'x-gateway-metadata': '{"t":"rt"}' };
    const socket = await open(url(), { headers });
    const events = recorder(socket);
    socket.send(JSON.stringify({ type: 'response.create' }));
    socket.send(JSON.stringify({ type: 'response.create' }));
    await events.until('response.done', 2);
    // Charged as each response.done arrived: the socket is still open.
    const next = await connect(url(), { headers });
    assert.ok(isRefusal(next), 'the next upgrade is refused: 300 tokens spent of 250');
    assert.equal(next.status, 429);
    socket.close();
    await reload(state());
  });

  test('hostile upstream usage numbers are not counted', async () => {
    mock.setUsage({ input_tokens: -5, output_tokens: 1e30, input_token_details: { cached_tokens: 'lots', audio_tokens: 9e99 }, output_token_details: { audio_tokens: -1 } });
    const socket = await open(url(), { headers: HEADERS });
    const events = recorder(socket);
    socket.send(JSON.stringify({ type: 'response.create' }));
    await events.until('response.done');
    socket.close();
    const record = await eventually(() => records.find((r) => r.route === '/v1/realtime'), 'the session record');
    assert.equal(record.promptTokens ?? 0, 0);
    assert.equal(record.completionTokens ?? 0, 0);
  });

  test('admission before the upgrade: no key 401, browser subprotocol key, upstream refusal 502, no model 400, a provider without realtime 400', async () => {
    const none = await connect(url());
    assert.ok(isRefusal(none));
    assert.equal(none.status, 401);
    assert.equal(mock.upgrades.length, 0, 'nothing went upstream');

    const browser = await connect(url(), { protocols: ['realtime', `openai-insecure-api-key.${TEST_GATEWAY_KEY}`, 'openai-beta.realtime-v1'], headers: { 'x-gateway-config': 'rt' } });
    assert.ok(!isRefusal(browser));
    assert.equal(browser.protocol, 'realtime');
    browser.close();

    mock.refuseWith(401);
    const refused = await connect(url(), { headers: HEADERS });
    assert.ok(isRefusal(refused));
    assert.equal(refused.status, 502);
    assert.ok(!refused.body.includes(PROVIDER_KEY));
    mock.refuseWith(undefined);

    const noModel = await connect(wsUrl(harness.gateway.url, '/v1/realtime'), { headers: { authorization: `Bearer ${TEST_GATEWAY_KEY}` } });
    assert.ok(isRefusal(noModel));
    assert.equal(noModel.status, 400);

    const anthropic = await connect(url(), { headers: { ...HEADERS, 'x-gateway-config': 'claude' } });
    assert.ok(isRefusal(anthropic));
    assert.equal(anthropic.status, 400);
    assert.equal((JSON.parse(anthropic.body) as { error: { code: string } }).error.code, 'AIGW_ERR_UNSUPPORTED_ENDPOINT');
  });

  test('egress policy: a host the request chose passes egress.clientAllow, checked on the resolved address before connecting', async () => {
    const viaHost = { 'x-gateway-api-key': TEST_GATEWAY_KEY, authorization: `Bearer ${PROVIDER_KEY}`, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url };
    const allowed = await open(url(), { headers: viaHost });
    allowed.close();
    assert.equal(mock.upgrades.length, 1);
    await reload({ ...state(), egress: { allow: ['127.0.0.0/8', '::1'], clientAllow: [] } });
    const denied = await connect(url(), { headers: viaHost });
    assert.ok(isRefusal(denied));
    assert.equal(denied.status, 400);
    assert.match(denied.body, /AIGW_ERR_EGRESS_DENIED/);
    assert.equal(mock.upgrades.length, 1, 'a denied host is never connected to');
    await reload(state());
  });

  test('hostile client frames: error events, nothing forwarded; an oversized one closes 1009; other sessions unharmed', async () => {
    const bystander = await open(url(), { headers: HEADERS });
    const bystanderEvents = recorder(bystander);
    const socket = await open(url(), { headers: HEADERS });
    const events = recorder(socket);
    await events.until('session.created');
    socket.send(Buffer.from([0, 1, 2]), { binary: true });
    socket.send('not json');
    socket.send(JSON.stringify({ no: 'type' }));
    await events.until('error', 3);
    assert.equal(mock.received.length, 0, 'no bad frame reached the upstream');
    const gone = closed(socket);
    socket.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'A'.repeat(40 * 1024) }));
    assert.equal((await gone).code, 1009);
    bystander.send(JSON.stringify({ type: 'response.create' }));
    await bystanderEvents.until('response.done');
    bystander.close();
  });

  test('input guardrails on the text a client adds: a deny is an error event and never reaches the provider; order is kept', async () => {
    const socket = await open(url(), { headers: { ...HEADERS, 'x-gateway-config': 'rt-guarded' } });
    const events = recorder(socket);
    const say = (text: string): string => JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
    socket.send(say('this is forbidden'));
    socket.send(say('this is fine'));
    socket.send(JSON.stringify({ type: 'response.create' }));
    await events.until('response.done');
    const error = events.events.find((e) => e['type'] === 'error') as { error: Record<string, unknown> };
    assert.equal(error.error['code'], 'AIGW_ERR_GUARDRAIL_DENIED');
    const forwarded = mock.received.map((event) => JSON.stringify(event));
    assert.equal(forwarded.length, 2);
    assert.match(forwarded[0] ?? '', /this is fine/);
    assert.match(forwarded[1] ?? '', /response\.create/);
    socket.close();
  });

  test('POST /v1/realtime/client_secrets is minted through the gateway and attributed to the key', async () => {
    const response = await fetch(`${harness.gateway.url}/realtime/client_secrets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-config': 'rt', 'content-type': 'application/json' },
      body: JSON.stringify({ session: { type: 'realtime', model: 'gpt-realtime' } }),
    });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { value: string }).value, 'ek_mock_ephemeral');
    assert.equal(mock.upgrades.at(-1)?.headers['authorization'], `Bearer ${PROVIDER_KEY}`);
    const record = await eventually(() => records.find((r) => r.route.startsWith('/v1/realtime/client_secrets')), 'its record');
    assert.equal(record.apiKeyId, 'test');
  });
});

describe('drain', () => {
  test('on shutdown every session gets a 1001 close frame with a reason', async () => {
    const own = await startHarness({ state: state() });
    const responses = await open(wsUrl(own.gateway.url, '/v1/responses'), { headers: { authorization: `Bearer ${TEST_GATEWAY_KEY}` } });
    const realtime = await open(wsUrl(own.gateway.url, `/v1/realtime?model=${MODEL}`), { headers: HEADERS });
    const closes = Promise.all([closed(responses), closed(realtime)]);
    await own.close();
    for (const close of await closes) assert.deepEqual(close, { code: 1001, reason: 'server shutting down' });
  });
});
