// Realtime audio priced at audio rates, and usage-limit policies (budgets) on both WebSocket
// transports: a realtime upgrade the budget cannot cover is a 429 budget_exceeded before
// anything goes upstream, every response.done is charged as it arrives (with the memory and
// the real Redis store), a session that runs out gets an error event and a close frame with
// the reason; each Responses WebSocket turn is charged like the HTTP request it is.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { MemoryBudgetStore, type BudgetStore } from '../../proxy/budgets/budget-store.ts';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { startMockRealtime, type MockRealtime } from '../fixtures/mock-openai-realtime.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { PREFIX, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';
import { closed, connect, isRefusal, open, recorder, wsUrl } from './ws-client.ts';

const PROVIDER_KEY = 'sk-realtime-provider-key-5678';
const MICRO = 1_000_000;
// USD per million tokens. Text: input 1000, cached 100, output 2000; audio: input 10000,
// cached 500, output 20000. `plain-voice` has no audio prices: its audio is billed as text.
const PRICES = [
  { model: 'voice-model', inputPerMillion: 1000, outputPerMillion: 2000, cachedInputPerMillion: 100, audioInputPerMillion: 10000, cachedAudioInputPerMillion: 500, audioOutputPerMillion: 20000 },
  { model: 'plain-voice', inputPerMillion: 1000, outputPerMillion: 2000, cachedInputPerMillion: 100 },
];
// The mock's response.done (DEFAULT_REALTIME_USAGE): input 100 = 60 text + 40 audio, 40 of it
// cached (20 text, 20 audio); output 50 = 10 text + 40 audio.
//   voice-model: 40×1000 + 20×100 + 20×10000 + 20×500 + 10×2000 + 40×20000 = 1,072,000 µ$ → $1.072
//   plain-voice: 60×1000 + 40×100 + 50×2000 = 164,000 µ$ → $0.164 (audio at text rates)
const VOICE_RESPONSE_USD = 1.072;
const PLAIN_RESPONSE_USD = 0.164;
// The first response's worst case: 4096 output tokens, all audio: 4096 × 20000 µ$ = $81.92.
// After one response the next also carries its prompt: 60×1000 + 40×10000 µ$ = $0.46 more.

let mock: MockRealtime;
let openai: MockOpenAI;
before(async () => {
  mock = await startMockRealtime({ apiKey: PROVIDER_KEY });
  openai = await startMockOpenAI({ apiKey: PROVIDER_KEY });
});
after(async () => {
  await mock.close();
  await openai.close();
});

function policy(id: string, type: 'cost' | 'tokens', creditLimit: number): Record<string, unknown> {
  return { id, type, credit_limit: creditLimit, conditions: [{ key: 'metadata.t', value: id }], group_by: [{ key: 'api_key' }] };
}

function state(): Record<string, unknown> {
  return baseState({
    providers: [
      { slug: 'rt', provider: 'openai', virtualKey: 'vk-rt', apiKey: PROVIDER_KEY, customHost: mock.url },
      { slug: 'http', provider: 'openai', virtualKey: 'vk-http', apiKey: PROVIDER_KEY, customHost: openai.url },
    ],
    configs: [
      { id: 'rt', config: { provider: '@rt' } },
      { id: 'http', config: { provider: '@http' } },
    ],
    modelPrices: PRICES,
    usageLimitPolicies: [policy('too-small', 'cost', 50), policy('mid-session', 'cost', 83), policy('ws-turns', 'tokens', 30), policy('headers', 'cost', 100)],
  });
}

const realtimeHeaders = (tag: string): Record<string, string> => ({ authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-config': 'rt', 'x-gateway-metadata': JSON.stringify({ t: tag }) });
const counterKey = (policyId: string): string => `{budget}:${policyId}:all:api_key=test`;
const close = (actual: number | undefined, expected: number, what: string): void => {
  assert.ok(actual !== undefined && Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≈ ${expected}`);
};

/** The session runs one response, then is cut: an error event budget_exceeded and close 1008 with the reason; the response is charged. */
async function exhaustMidSession(harness: Harness, store: BudgetStore): Promise<void> {
  const socket = await open(wsUrl(harness.gateway.url, '/v1/realtime?model=voice-model'), { headers: realtimeHeaders('mid-session') });
  const events = recorder(socket);
  const gone = closed(socket);
  socket.send(JSON.stringify({ type: 'response.create' }));
  await events.until('response.done');
  const cut = await gone;
  assert.equal(cut.code, 1008);
  assert.equal(cut.reason, 'budget exceeded');
  const error = events.events.find((event) => event['type'] === 'error') as { error: Record<string, unknown> } | undefined;
  assert.equal(error?.error['type'], 'budget_exceeded');
  assert.equal(error?.error['code'], 'AIGW_ERR_BUDGET_EXCEEDED');
  assert.match(String(error?.error['message']), /mid-session/);
  // The response is charged at audio rates; no reservation is left open.
  const [counter] = await eventually(async () => {
    const read = await store.read([counterKey('mid-session')]);
    return read[0]?.spent === Math.round(VOICE_RESPONSE_USD * MICRO) && read[0]?.used === read[0]?.spent ? read : undefined;
  }, 'the response charged and the reservation given back');
  assert.equal(counter?.spent, 1_072_000);
}

describe('WebSocket budgets and audio pricing (memory store)', () => {
  let harness: Harness;
  const store = new MemoryBudgetStore();
  const records: RequestRecord[] = [];
  before(async () => {
    harness = await startHarness({ state: state(), budgetStore: store, requestSink: (record) => records.push(record) });
  });
  after(() => harness.close());

  test("realtime audio tokens are priced at the model's audio rates; a model without audio prices at its text rates", async () => {
    for (const [model, responses, expected] of [
      ['voice-model', 2, 2 * VOICE_RESPONSE_USD],
      ['plain-voice', 1, PLAIN_RESPONSE_USD],
    ] as const) {
      records.length = 0;
      const socket = await open(wsUrl(harness.gateway.url, `/v1/realtime?model=${model}`), { headers: realtimeHeaders('priced') });
      const events = recorder(socket);
      for (let index = 0; index < responses; index++) socket.send(JSON.stringify({ type: 'response.create' }));
      await events.until('response.done', responses);
      socket.close();
      const record = await eventually(() => records.find((r) => r.route === '/v1/realtime'), 'the session record');
      close(record.costUsd, expected, `${model} session cost`);
      const line = await eventually(
        () => harness.logs.findLast((l) => l['msg'] === 'realtime session ended' && (l['realtime'] as Record<string, unknown>)['responses'] === responses),
        'the session log line',
      );
      const realtime = line['realtime'] as Record<string, number>;
      assert.equal(realtime['cached_audio_tokens'], 20 * responses);
      close(realtime['cost_usd'], expected, `${model} logged cost`);
    }
  });

  test('a realtime upgrade the budget cannot cover is refused with 429 budget_exceeded, before anything goes upstream', async () => {
    mock.upgrades.length = 0;
    const refused = await connect(wsUrl(harness.gateway.url, '/v1/realtime?model=voice-model'), { headers: realtimeHeaders('too-small') });
    assert.ok(isRefusal(refused));
    assert.equal(refused.status, 429);
    const body = JSON.parse(refused.body) as { error: Record<string, unknown> };
    assert.equal(body.error['type'], 'budget_exceeded');
    assert.equal(body.error['code'], 'AIGW_ERR_BUDGET_EXCEEDED');
    assert.match(String(body.error['message']), /too-small/);
    assert.equal(mock.upgrades.length, 0, 'no upstream socket was opened');
    const [counter] = await store.read([counterKey('too-small')]);
    assert.equal(counter?.used, 0, 'nothing reserved');
  });

  test('a realtime session that runs out mid-session gets an error event and close 1008 "budget exceeded"; what it spent is charged', async () => {
    await exhaustMidSession(harness, store);
  });

  test('the 101 of a realtime upgrade under a budget carries the remaining budget, as an HTTP answer does', async () => {
    const socket = new WebSocket(wsUrl(harness.gateway.url, '/v1/realtime?model=voice-model'), { headers: realtimeHeaders('headers') });
    const opened = new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const headers = await new Promise<Record<string, unknown>>((resolve) => socket.once('upgrade', (response) => resolve(response.headers)));
    await opened;
    socket.close();
    assert.equal(headers['x-gateway-budget-policy'], 'headers');
    assert.equal(headers['x-gateway-budget-unit'], 'usd');
    // $100 less the first response's worst case ($81.92) reserved.
    assert.equal(headers['x-gateway-budget-remaining'], '18.080000');
  });

  test('a usage-limit policy created through the API applies to an open realtime session from its next response', async () => {
    const socket = await open(wsUrl(harness.gateway.url, '/v1/realtime?model=voice-model'), { headers: realtimeHeaders('api-created') });
    const events = recorder(socket);
    await events.until('session.created');
    const created = await fetch(`${harness.gateway.origin}/v1/policies/usage-limits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY },
      body: JSON.stringify({ type: 'cost', credit_limit: 5, conditions: [{ key: 'metadata.t', value: 'api-created' }], group_by: [{ key: 'api_key' }] }),
    });
    assert.equal(created.status, 200);
    const { id } = (await created.json()) as { id: string };
    const gone = closed(socket);
    // The next response's worst case ($82.38) does not fit the new $5 policy.
    socket.send(JSON.stringify({ type: 'response.create' }));
    await events.until('response.done');
    assert.deepEqual(await gone, { code: 1008, reason: 'budget exceeded' });
    const error = events.events.find((event) => event['type'] === 'error') as { error: Record<string, unknown> } | undefined;
    assert.match(String(error?.error['message']), new RegExp(id));
  });

  test('Responses WebSocket: each turn is charged like its HTTP request; a turn past the budget is an error event on an open socket; a key with nothing left is refused at the upgrade', async () => {
    const headers = { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-config': 'http', 'x-gateway-metadata': JSON.stringify({ t: 'ws-turns' }) };
    const url = wsUrl(harness.gateway.url, '/v1/responses');
    const socket = await open(url, { headers });
    const events = recorder(socket);
    // Worst case ≈ 20 tokens (the body's size, max_output_tokens 1) fits the 30; the answer spends ~100.
    openai.enqueue({ text: 'word '.repeat(100) });
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'hi', max_output_tokens: 1 }));
    await events.until('response.completed');
    const [spent] = await eventually(async () => {
      const read = await store.read([counterKey('ws-turns')]);
      return (read[0]?.spent ?? 0) >= 100 ? read : undefined;
    }, 'the turn charged');
    assert.ok((spent?.spent ?? 0) >= 100);
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'again', max_output_tokens: 1 }));
    const [refusal] = (await events.until('error')).filter((event) => event['type'] === 'error') as Array<{ status: number; error: Record<string, unknown> }>;
    assert.equal(refusal?.status, 429);
    assert.equal(refusal?.error['type'], 'budget_exceeded');
    assert.equal(socket.readyState, socket.OPEN, 'a refused turn leaves the socket open');
    socket.close();
    const again = await connect(url, { headers });
    assert.ok(isRefusal(again), 'the upgrade is refused: nothing is left');
    assert.equal(again.status, 429);
    assert.equal((JSON.parse(again.body) as { error: Record<string, unknown> }).error['type'], 'budget_exceeded');
  });
});

describe('WebSocket budgets with the real Redis store', { skip }, () => {
  let harness: Harness;
  const store = new RedisBudgetStore({ url: REDIS_URL, keyPrefix: `${PREFIX}ws:` });
  before(async () => {
    await store.connect?.(2_000);
    harness = await startHarness({ state: state(), budgetStore: store });
  });
  after(async () => {
    await harness.close();
    await store.close();
  });

  test('a realtime session is charged per response.done in Redis and cut when the next response cannot be covered', async () => {
    await exhaustMidSession(harness, store);
  });
});
