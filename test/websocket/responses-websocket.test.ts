// Responses API WebSocket mode end to end: Codex-style and SDK clients → the real gateway →
// the mock OpenAI upstream over HTTP (a WebSocket turn served from the SSE stream).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/beta/responses/ws';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { closed, connect, isRefusal, open, recorder, wsUrl } from './ws-client.ts';

const PROVIDER_KEY = 'sk-upstream-secret-key-1234';
const ADMIN_ONLY_KEY = 'gw-admin-only-key-0000-012345678';
// What Codex CLI sends on its Responses WebSocket upgrade (codex-rs, responses_websocket.rs).
const CODEX_HEADERS = {
  authorization: `Bearer ${TEST_GATEWAY_KEY}`,
  'openai-beta': 'responses_websockets=2026-02-06',
  originator: 'codex_cli_rs',
  session_id: '0199a3c1-0000-7000-8000-000000000001',
  'x-gateway-config': 'saved-mock',
};

let mock: MockOpenAI;
let harness: Harness;
const records: RequestRecord[] = [];

before(async () => {
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: PROVIDER_KEY, customHost: mock.url }],
      configs: [{ id: 'saved-mock', config: { provider: '@mock' } }],
      rateLimitPolicies: [{ id: 'tiny', type: 'requests', unit: 'rpm', value: 1000, conditions: [{ key: 'metadata.tier', value: 'tiny' }], group_by: [{ key: 'api_key' }] }],
    }),
    requestSink: (record) => records.push(record),
    websocket: { maxSocketsPerKey: 4, maxMessageBytes: 64 * 1024 },
  });
});

after(async () => {
  await harness.close();
  await mock.close();
});

beforeEach(() => {
  mock.reset();
  records.length = 0;
});

const url = (): string => wsUrl(harness.gateway.url, '/v1/responses');

describe('Responses WebSocket mode', () => {
  test('a Codex-style upgrade: response.create in, the SSE events out, one log record per turn', async () => {
    const socket = await open(url(), { headers: CODEX_HEADERS });
    const events = recorder(socket);
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'hello there' }));
    await events.until('response.completed');
    const types = events.events.map((event) => event['type']);
    assert.equal(types[0], 'response.created');
    assert.ok(types.includes('response.output_text.delta'));
    const text = events.events.filter((e) => e['type'] === 'response.output_text.delta').map((e) => e['delta']).join('');
    assert.equal(text, DEFAULT_REPLY_TEXT);
    // Upstream: an ordinary streamed POST /v1/responses with the provider's key, never the gateway's.
    assert.equal(mock.requests[0]?.path, '/v1/responses');
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${PROVIDER_KEY}`);
    assert.equal((mock.requests[0]?.json as Record<string, unknown>)['stream'], true);
    const turn = await eventually(() => records.find((r) => r.route === '/v1/responses' && r.method === 'POST'), 'turn record');
    assert.equal(turn.status, 200);
    assert.ok((turn.promptTokens ?? 0) > 0);
    socket.close(1000, 'bye');
    const session = await eventually(() => records.find((r) => r.route === '/v1/responses' && r.method === 'GET'), 'session record');
    assert.equal(session.status, 101);
  });

  test('multi-turn with previous_response_id and store:false: the connection keeps the previous response', async () => {
    const socket = await open(url(), { headers: CODEX_HEADERS });
    const events = recorder(socket);
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', store: false, input: 'first question' }));
    await events.until('response.completed');
    const first = events.events.find((e) => e['type'] === 'response.completed')?.['response'] as Record<string, unknown>;
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', store: false, previous_response_id: first['id'], input: [{ type: 'message', role: 'user', content: 'second question' }] }));
    await events.until('response.completed', 2);
    const second = mock.requests[1]?.json as Record<string, unknown>;
    assert.equal(second['previous_response_id'], undefined);
    const input = second['input'] as Array<Record<string, unknown>>;
    assert.equal(input[0]?.['content'], 'first question');
    assert.equal(input.at(-1)?.['content'], 'second question');
    assert.ok(input.some((item) => item['role'] === 'assistant'), 'the previous output is sent back');
    // An id the connection does not hold: OpenAI's error, the turn not run.
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', store: false, previous_response_id: 'resp_unknown', input: 'x' }));
    await events.until('error');
    const error = events.events.find((e) => e['type'] === 'error') as { status: number; error: Record<string, unknown> };
    assert.equal(error.error['code'], 'previous_response_not_found');
    assert.equal(mock.requests.length, 2);
    // With store left on, the id is the provider's and goes through.
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', previous_response_id: 'resp_stored', input: 'y' }));
    await events.until('response.completed', 3);
    assert.equal((mock.requests[2]?.json as Record<string, unknown>)['previous_response_id'], 'resp_stored');
    socket.close();
  });

  test("the openai SDK's ResponsesWS works through the gateway", async () => {
    const client = new OpenAI({ baseURL: harness.gateway.url, apiKey: TEST_GATEWAY_KEY, maxRetries: 0 });
    const rws = new ResponsesWS(client, { headers: { 'x-gateway-config': 'saved-mock' } } as never);
    const done = new Promise<Record<string, unknown>>((resolve, reject) => {
      rws.on('response.completed', (event) => resolve(event as unknown as Record<string, unknown>));
      rws.on('error', reject);
    });
    rws.send({ type: 'response.create', model: 'gpt-4.1', input: 'hi from the sdk' } as never);
    const event = await done;
    assert.equal((event['response'] as Record<string, unknown>)['status'], 'completed');
    rws.close();
  });

  test('admission before the upgrade: 401, 403, unknown config 404 and the browser subprotocol key', async () => {
    const none = await connect(url());
    assert.ok(isRefusal(none));
    assert.equal(none.status, 401);
    assert.equal((JSON.parse(none.body) as { error: { code: string } }).error.code, 'AIGW_ERR_MISSING_API_KEY');
    const wrongScope = await connect(url(), { headers: { 'x-gateway-api-key': ADMIN_ONLY_KEY } });
    assert.ok(isRefusal(wrongScope));
    assert.equal(wrongScope.status, 403);
    const unknownConfig = await connect(url(), { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'no-such-config' } });
    assert.ok(isRefusal(unknownConfig));
    assert.equal(unknownConfig.status, 404);
    const plain = await fetch(`${harness.gateway.url}/responses`, { headers: { authorization: `Bearer ${TEST_GATEWAY_KEY}` } });
    assert.equal(plain.status, 404, 'a GET without an upgrade is an ordinary 404');
    assert.equal(((await plain.json()) as { error: { code: string } }).error.code, 'AIGW_ERR_NOT_FOUND');
    const browser = await connect(url() + '?model=gpt-4.1', { protocols: ['realtime', `openai-insecure-api-key.${TEST_GATEWAY_KEY}`], headers: { 'x-gateway-config': 'saved-mock' } });
    assert.ok(!isRefusal(browser));
    assert.equal(browser.protocol, 'realtime', 'the key is never echoed as the chosen subprotocol');
    browser.close();
  });

  test('rate limits refuse the upgrade with a 429', async () => {
    await harness.writeState(
      baseState({
        providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: PROVIDER_KEY, customHost: mock.url }],
        configs: [{ id: 'saved-mock', config: { provider: '@mock' } }],
        rateLimitPolicies: [{ id: 'one', type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'metadata.tier', value: 'one' }], group_by: [{ key: 'api_key' }] }],
      }),
    );
    const headers = { ...CODEX_HEADERS, 'x-gateway-metadata': '{"tier":"one"}' };
    await eventually(async () => {
      const first = await connect(url(), { headers });
      if (!isRefusal(first)) first.close();
      const second = await connect(url(), { headers });
      if (!isRefusal(second)) second.close();
      return isRefusal(second) && second.status === 429;
    }, 'a 429 on the upgrade once the policy is loaded');
  });

  test('hostile frames get an error event or a close code; other sessions are unharmed', async () => {
    const bystander = await open(url(), { headers: CODEX_HEADERS });
    const bystanderEvents = recorder(bystander);
    const socket = await open(url(), { headers: CODEX_HEADERS });
    const events = recorder(socket);
    socket.send(Buffer.from([1, 2, 3]), { binary: true });
    socket.send('{not json');
    socket.send(JSON.stringify({ type: 'session.update' }));
    socket.send(JSON.stringify([1]));
    await events.until('error', 4);
    const codes = events.events.map((e) => (e['error'] as Record<string, unknown>)['code']);
    assert.deepEqual(codes, ['AIGW_ERR_INVALID_BODY', 'AIGW_ERR_INVALID_JSON', 'AIGW_ERR_INVALID_BODY', 'AIGW_ERR_INVALID_BODY']);
    // Still usable after bad frames.
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'still here' }));
    await events.until('response.completed');
    // Past the message cap: closed with 1009.
    const gone = closed(socket);
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'x'.repeat(70 * 1024) }));
    assert.equal((await gone).code, 1009);
    bystander.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'unharmed' }));
    await bystanderEvents.until('response.completed');
    bystander.close();
  });

  test('a key holds at most its share of sockets: the next upgrade is a 429', async () => {
    const held = await Promise.all([1, 2, 3, 4].map(() => open(url(), { headers: CODEX_HEADERS })));
    const refused = await connect(url(), { headers: CODEX_HEADERS });
    assert.ok(isRefusal(refused));
    assert.equal(refused.status, 429);
    assert.equal((JSON.parse(refused.body) as { error: { code: string } }).error.code, 'AIGW_ERR_KEY_IN_FLIGHT_LIMIT');
    for (const socket of held) socket.close();
    await Promise.all(held.map((socket) => closed(socket)));
    await eventually(async () => {
      const again = await connect(url(), { headers: CODEX_HEADERS });
      if (isRefusal(again)) return false;
      again.close();
      return true;
    }, 'a slot is free again once the sockets closed');
  });

  test('an upgrade flood from one key: exactly its share is accepted, the rest refused with 429, none left half-open', async () => {
    const attempts = await Promise.all(Array.from({ length: 40 }, () => connect(url(), { headers: CODEX_HEADERS })));
    const accepted = attempts.filter((attempt) => !isRefusal(attempt));
    const refused = attempts.filter(isRefusal);
    assert.equal(accepted.length, 4);
    assert.ok(refused.every((refusal) => refusal.status === 429));
    for (const socket of accepted) if (!isRefusal(socket)) socket.close();
    await Promise.all(accepted.map((socket) => (isRefusal(socket) ? undefined : closed(socket))));
    await eventually(async () => {
      const again = await connect(url(), { headers: CODEX_HEADERS });
      if (isRefusal(again)) return false;
      again.close();
      return true;
    }, 'slots given back');
  });

  test('an upstream error before the first event is an error event, and the socket stays open', async () => {
    mock.enqueue({ status: 400, body: { error: { message: 'bad input', type: 'invalid_request_error', param: 'input', code: null } } });
    const socket = await open(url(), { headers: CODEX_HEADERS });
    const events = recorder(socket);
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'x' }));
    await events.until('error');
    const error = events.events[0] as { status: number; error: Record<string, unknown> };
    assert.equal(error.status, 400);
    assert.equal(error.error['message'], 'bad input');
    socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'again' }));
    await events.until('response.completed');
    socket.close();
  });
});

describe('a client that stops reading', () => {
  test('is closed 1008 once its send buffer passes the cap; the turn is aborted upstream; memory stays bounded', async () => {
    const own = await startHarness({
      state: baseState({
        providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: PROVIDER_KEY, customHost: mock.url }],
        configs: [{ id: 'saved-mock', config: { provider: '@mock' } }],
      }),
      websocket: { maxBufferedBytes: 256 * 1024 },
    });
    try {
      mock.reset();
      // About 3 MB of text in 1 KB deltas, then the completed events repeating it.
      mock.enqueue({ text: `${'w'.repeat(1000)} `.repeat(3000) });
      const socket = await open(wsUrl(own.gateway.url, '/v1/responses'), { headers: CODEX_HEADERS });
      const tcp = (socket as unknown as { _socket: import('node:net').Socket })._socket;
      tcp.pause();
      socket.send(JSON.stringify({ type: 'response.create', model: 'gpt-4.1', input: 'a long answer please' }));
      await mock.waitForAborted(1, 10_000);
      const gone = closed(socket);
      tcp.resume();
      const close = await gone;
      assert.equal(close.code, 1008);
      assert.match(close.reason, /not reading/);
    } finally {
      await own.close();
    }
  });
});
