// The gateway's own answers: auth, validation, limits, errors, headers, aborts, bytes.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { LIMIT_VIOLATIONS, VALID_BODIES } from '../fixtures/limits-violations.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const PROVIDER_KEY = 'sk-upstream-secret-key-5678';
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  harness = await startHarness({ state: baseState(), bodyLimitBytes: 64 * 1024 });
});

after(async () => {
  await harness.close();
  await mock.close();
});

beforeEach(() => mock.reset());

function headers(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-gateway-api-key': TEST_GATEWAY_KEY,
    'x-gateway-provider': 'openai',
    'x-gateway-custom-host': mock.url,
    authorization: `Bearer ${PROVIDER_KEY}`,
    ...extra,
  };
}

async function post(path: string, body: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${harness.gateway.origin}${path}`, { method: 'POST', headers: headers(extra), body });
}

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null; provider?: string };
}

async function errorOf(response: Response): Promise<ErrorBody> {
  const body = (await response.json()) as ErrorBody;
  assert.equal(typeof body.error.message, 'string');
  assert.equal(typeof body.error.type, 'string');
  assert.ok('param' in body.error && 'code' in body.error, 'OpenAI error shape');
  return body;
}

describe('authentication', () => {
  test('missing gateway key → 401, upstream not called', async () => {
    const response = await post('/v1/chat/completions', CHAT, { 'x-gateway-api-key': '' });
    assert.equal(response.status, 401);
    assert.equal((await errorOf(response)).error.code, 'AIGW_ERR_MISSING_API_KEY');
    assert.equal(mock.requests.length, 0);
  });

  test('unknown gateway key → 401 through the SDK', async () => {
    const client = new OpenAI({
      baseURL: harness.gateway.url,
      apiKey: PROVIDER_KEY,
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': 'wrong-key-123456', 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url },
    });
    const error = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal(mock.requests.length, 0);
  });

  test('a key without the inference scope → 403', async () => {
    const response = await post('/v1/chat/completions', CHAT, { 'x-gateway-api-key': 'gw-admin-only-key-0000-012345678' });
    assert.equal(response.status, 403);
    assert.equal((await errorOf(response)).error.type, 'permission_error');
  });

  test('health, readiness and metrics need no key', async () => {
    for (const path of ['/health', '/ready', '/metrics']) {
      const response = await fetch(`${harness.gateway.origin}${path}`);
      assert.equal(response.status, 200, path);
    }
  });
});

describe('request validation', () => {
  for (const row of LIMIT_VIOLATIONS) {
    test(`400: ${row.name}`, async () => {
      const response = await post(row.path, JSON.stringify(row.body));
      assert.equal(response.status, 400);
      const body = await errorOf(response);
      assert.equal(body.error.param, row.param);
      assert.equal(body.error.type, 'invalid_request_error');
    });
  }

  test('no violation reached the upstream', () => {
    assert.equal(mock.requests.length, 0);
  });

  test('valid bodies (edge values, unknown extra fields) pass through', async () => {
    for (const row of VALID_BODIES) {
      const response = await post(row.path, JSON.stringify(row.body));
      assert.equal(response.status, 200, `${row.name}: ${await response.clone().text()}`);
      await response.arrayBuffer();
    }
  });

  test('invalid JSON → 400; wrong content type → 415; empty body → 400', async () => {
    assert.equal((await post('/v1/chat/completions', '{"model":')).status, 400);
    const text = await fetch(`${harness.gateway.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...headers(), 'content-type': 'application/xml' },
      body: '<x/>',
    });
    assert.equal(text.status, 415);
    await errorOf(text);
    assert.equal((await post('/v1/chat/completions', '')).status, 400);
  });

  test('oversized body → 413 in the OpenAI shape', async () => {
    const big = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(100 * 1024) }] });
    const response = await post('/v1/chat/completions', big);
    assert.equal(response.status, 413);
    assert.equal((await errorOf(response)).error.code, 'AIGW_ERR_BODY_TOO_LARGE');
  });

  test('x-gateway-metadata must be a JSON object', async () => {
    for (const value of ['not json', '[1,2]', '"text"', 'null']) {
      const response = await post('/v1/chat/completions', CHAT, { 'x-gateway-metadata': value });
      assert.equal(response.status, 400, value);
      assert.equal((await errorOf(response)).error.param, 'x-gateway-metadata');
    }
  });

  test('unknown routes → 404 in the OpenAI shape', async () => {
    const response = await post('/v1/not-a-route', CHAT);
    assert.equal(response.status, 404);
    assert.equal((await errorOf(response)).error.type, 'not_found_error');
    // Default deny: an unknown route needs a key before it is told apart from a known one.
    const anonymous = await fetch(`${harness.gateway.origin}/nowhere`);
    assert.equal(anonymous.status, 401);
    await errorOf(anonymous);
    const root = await fetch(`${harness.gateway.origin}/nowhere`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    assert.equal(root.status, 404);
    await errorOf(root);
  });
});

describe('headers, bytes and upstream errors', () => {
  test('trace id is echoed, or generated when absent', async () => {
    const echoed = await post('/v1/chat/completions', CHAT, { 'x-gateway-trace-id': 'trace-abc-123' });
    assert.equal(echoed.headers.get('x-gateway-trace-id'), 'trace-abc-123');
    await echoed.arrayBuffer();
    const generated = await post('/v1/chat/completions', CHAT);
    assert.match(generated.headers.get('x-gateway-trace-id') ?? '', /^[0-9a-f-]{36}$/);
    await generated.arrayBuffer();
    const onError = await post('/v1/chat/completions', '{}', { 'x-gateway-trace-id': 'trace-err' });
    assert.equal(onError.headers.get('x-gateway-trace-id'), 'trace-err');
  });

  test('gateway response headers', async () => {
    const response = await post('/v1/chat/completions', CHAT);
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    assert.equal(response.headers.get('x-gateway-last-used-option-index'), 'config');
    assert.equal(response.headers.get('x-gateway-retry-attempt-count'), '0');
    assert.equal(response.headers.get('x-gateway-cache-status'), 'DISABLED');
    assert.ok(response.headers.get('x-request-id'), 'provider headers pass through');
    await response.arrayBuffer();
  });

  test('the upstream response bytes arrive unchanged (plain and streaming)', async () => {
    const plain = Buffer.from(await (await post('/v1/chat/completions', CHAT)).arrayBuffer());
    assert.deepEqual(plain, mock.lastResponseBytes());
    const streamed = await post('/v1/chat/completions', JSON.stringify({ ...JSON.parse(CHAT), stream: true }));
    const bytes = Buffer.from(await streamed.arrayBuffer());
    // The gateway asked for usage (to account the stream) and gives back the stream the
    // client asked for: the provider's bytes without the usage chunk and `"usage":null`.
    const upstream = mock.lastResponseBytes().toString('utf8');
    const asked = upstream
      .split('\n\n')
      .filter((frame) => !/"choices":\[\],"usage":\{/.test(frame))
      .map((frame) => frame.replace(',"usage":null', ''))
      .join('\n\n');
    assert.notEqual(asked, upstream, 'the provider was asked for usage');
    assert.deepEqual(bytes, Buffer.from(asked));
  });

  test('the client body bytes reach the upstream unchanged', async () => {
    const body = '{ "model":"gpt-4o-mini",  "messages":[{"role":"user","content":"hi"}], "x_extra": {"b":1,"a":2} }';
    await (await post('/v1/chat/completions', body)).arrayBuffer();
    assert.equal(mock.requests[0]?.rawBody.toString('utf8'), body);
  });

  test('a stream the gateway asks usage for: the client body bytes with stream_options added at the end, not re-serialised', async () => {
    const body = '{ "model":"gpt-4o-mini",  "messages":[{"role":"user","content":"hi"}], "stream": true, "x_extra": {"b":1,"a":2} }\n';
    await (await post('/v1/chat/completions', body)).arrayBuffer();
    const sent = mock.requests[0]?.rawBody.toString('utf8');
    assert.equal(sent, '{ "model":"gpt-4o-mini",  "messages":[{"role":"user","content":"hi"}], "stream": true, "x_extra": {"b":1,"a":2} ,"stream_options":{"include_usage":true}}\n');
    // Options the client sent are kept and completed: the body is serialised then.
    mock.reset();
    await (await post('/v1/chat/completions', '{"model":"gpt-4o-mini", "messages":[{"role":"user","content":"hi"}], "stream":true, "stream_options":{"include_usage":false}}')).arrayBuffer();
    assert.deepEqual((mock.requests[0]?.json as { stream_options?: unknown }).stream_options, { include_usage: true });
  });

  test('upstream error status is kept and the body normalised, provider named', async () => {
    mock.enqueue({ status: 429, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }, headers: { 'retry-after': '7' } });
    const limited = await post('/v1/chat/completions', CHAT);
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7');
    const body = await errorOf(limited);
    assert.equal(body.error.message, 'Rate limit reached');
    assert.equal(body.error.provider, 'openai');

    mock.enqueue({ status: 503, body: 'upstream overloaded', headers: { 'content-type': 'text/plain' } });
    const plainText = await post('/v1/chat/completions', CHAT);
    assert.equal(plainText.status, 503);
    assert.equal((await errorOf(plainText)).error.message, 'upstream overloaded');

    mock.enqueue({ status: 401, body: { error: { message: 'bad key', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } });
    const error = await harness
      .client({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url }, { apiKey: PROVIDER_KEY })
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal(error.code, 'invalid_api_key');
  });

  test('an unreachable upstream → 502 in the OpenAI shape', async () => {
    const response = await post('/v1/chat/completions', CHAT, { 'x-gateway-custom-host': 'http://127.0.0.1:1/v1' });
    assert.equal(response.status, 502);
    assert.equal((await errorOf(response)).error.code, 'AIGW_ERR_UPSTREAM_UNREACHABLE');
  });

  test('a client abort mid-stream closes the upstream request', async () => {
    mock.enqueue({ stall: 'mid-stream' });
    const response = await post('/v1/chat/completions', JSON.stringify({ ...JSON.parse(CHAT), stream: true }), {});
    const reader = response.body?.getReader();
    assert.ok(reader);
    await reader.read(); // the first chunk arrived: the stream is flowing
    await reader.cancel();
    await mock.waitForAborted(1, 3000);
    assert.equal(mock.abortedRequests, 1);
  });

  test('a client abort before the upstream answers closes the upstream request', async () => {
    mock.enqueue({ stall: 'before-headers' });
    const controller = new AbortController();
    const pending = fetch(`${harness.gateway.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: headers(),
      body: CHAT,
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await mock.waitForRequests(1, 3000);
    controller.abort();
    await pending;
    await mock.waitForAborted(1, 3000);
  });
});

describe('observability', () => {
  test('/metrics counts requests by route, provider and status class', async () => {
    await (await post('/v1/chat/completions', CHAT)).arrayBuffer();
    const text = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(text, /aigateway_requests_total\{route="\/v1\/chat\/completions",provider="openai",status_class="2xx"\} \d+/);
    assert.match(text, /aigateway_request_duration_seconds_bucket\{le="0\.005",route="\/v1\/chat\/completions"/);
    assert.match(text, /aigateway_config_info\{hash="[0-9a-f]{16}"\} 1/);
  });

  test('one log line per request, with trace id and metadata, without secrets', async () => {
    const response = await post('/v1/chat/completions', CHAT, {
      'x-gateway-trace-id': 'trace-log-1',
      'x-gateway-metadata': JSON.stringify({ _user: 'u-42', team: 'search' }),
    });
    await response.arrayBuffer();
    await eventually(() => harness.logs.some((line) => line['trace_id'] === 'trace-log-1'), 'the request log line', { timeoutMs: 10_000 });
    const line = harness.logs.find((entry) => entry['trace_id'] === 'trace-log-1');
    assert.deepEqual(line?.['metadata'], { _user: 'u-42', team: 'search' });
    assert.equal(line?.['provider'], 'openai');
    assert.equal(line?.['model'], 'gpt-4o-mini');
    assert.equal(line?.['status'], 200);
    assert.equal(typeof line?.['latency_ms'], 'number');
    assert.equal(line?.['api_key_id'], 'test');
    const text = harness.logText();
    assert.ok(!text.includes(PROVIDER_KEY), 'provider key not logged');
    assert.ok(!text.includes(TEST_GATEWAY_KEY), 'gateway key not logged');
  });
});
