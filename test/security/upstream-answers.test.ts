// Findings 8 and 11 (forwarded routes): what an upstream answers reaches the client only
// through the guarded call — credentials the call sent are redacted from relayed bodies and
// headers, only allow-listed headers pass, a redirect becomes a 502, and an egress denial
// is a 400 AIGW_ERR_EGRESS_DENIED on files, batches and fine-tuning as on inference.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const PROVIDER_KEY = 'sk-live-provider-secret-0123456789';
const VK = 'vk-up';

let mock: MockOpenAI;
let dataDir: string;
before(async () => {
  mock = await startMockOpenAI();
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-upstream-answers-'));
});
after(async () => {
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});
beforeEach(() => mock.reset());

async function gatewayWith(egressAllow: string[], name: string): Promise<Harness> {
  return startHarness({
    state: baseState({
      egress: { allow: egressAllow },
      // A saved host that egress.allow denies no longer loads (docs/configuration.md, `validate`);
      // the connect-time denial is shown with a request-chosen host instead.
      providers: egressAllow.length === 0 ? [] : [{ slug: 'up', provider: 'openai', virtualKey: VK, apiKey: PROVIDER_KEY, customHost: mock.url }],
    }),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, `${name}.sqlite`) } })],
  });
}

async function call(harness: Harness, method: string, path: string, body?: unknown, target: Record<string, string> = { 'x-gateway-virtual-key': VK }) {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: {
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      ...target,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: JSON.parse(text) as { error?: { code: string | null; message: string } } };
}

function assertNoSecret(result: { headers: Headers; text: string }, where: string): void {
  assert.ok(!result.text.includes(PROVIDER_KEY), `${where}: the body quotes the provider key`);
  for (const [name, value] of result.headers) assert.ok(!value.includes(PROVIDER_KEY), `${where}: header ${name} quotes the provider key`);
}

describe('answers relayed from upstreams (loopback allowed)', () => {
  let harness: Harness;
  before(async () => {
    harness = await gatewayWith(['127.0.0.0/8'], 'allowed');
  });
  after(async () => harness.close());

  const echoingError = {
    status: 401,
    body: { error: { message: `Incorrect API key provided: ${PROVIDER_KEY}. You can find your key at …`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
    headers: {
      'x-request-id': 'req_echo_1',
      'x-echo-authorization': `Bearer ${PROVIDER_KEY}`,
      'www-authenticate': `Bearer realm="${PROVIDER_KEY}"`,
      'set-cookie': 'provider_session=abc; HttpOnly',
      server: 'upstream-internal/1.2',
    },
  };

  for (const [label, method, path, body] of [
    ['files', 'GET', '/files/file-abc', undefined],
    ['batches', 'POST', '/batches/batch_abc/cancel', undefined],
    ['fine-tuning', 'GET', '/fine_tuning/jobs/ftjob-abc', undefined],
  ] as const) {
    test(`${label}: an upstream error echoing the provider key is relayed redacted, headers allow-listed`, { timeout: 20_000 }, async () => {
      mock.enqueue(echoingError);
      const result = await call(harness, method, path, body);
      assert.equal(result.status, 401);
      assertNoSecret(result, label);
      assert.match(result.json.error?.message ?? '', /Incorrect API key provided: \[redacted\]/);
      assert.equal(result.headers.get('x-request-id'), 'req_echo_1', 'request ids are relayed');
      assert.equal(result.headers.get('set-cookie'), null);
      assert.equal(result.headers.get('www-authenticate'), null);
      assert.equal(result.headers.get('x-echo-authorization'), null);
      assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${PROVIDER_KEY}`, 'the provider did get the key');
    });
  }

  test('a forwarded success relays rate-limit headers and drops the rest', { timeout: 20_000 }, async () => {
    mock.enqueue({
      status: 200,
      body: { id: 'file-abc', object: 'file', bytes: 3, created_at: 1, filename: 'a.jsonl', purpose: 'batch' },
      headers: { 'x-request-id': 'req_ok_1', 'x-ratelimit-remaining-requests': '9', 'retry-after': '1', 'set-cookie': 'a=b', 'x-backend-host': '10.1.2.3' },
    });
    const result = await call(harness, 'GET', '/files/file-abc');
    assert.equal(result.status, 200);
    assert.equal(result.headers.get('x-ratelimit-remaining-requests'), '9');
    assert.equal(result.headers.get('retry-after'), '1');
    assert.equal(result.headers.get('x-request-id'), 'req_ok_1');
    assert.equal(result.headers.get('set-cookie'), null);
    assert.equal(result.headers.get('x-backend-host'), null);
  });

  test('inference: an error echoing the key in a header and the body is redacted', { timeout: 20_000 }, async () => {
    mock.enqueue({ ...echoingError, status: 400, headers: { ...echoingError.headers, 'x-debug-key': PROVIDER_KEY } });
    const result = await call(harness, 'POST', '/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(result.status, 400);
    assertNoSecret(result, 'inference');
    assert.equal(result.headers.get('x-debug-key'), null);
    assert.equal(result.headers.get('server'), null);
  });

  for (const [label, method, path] of [
    ['files', 'DELETE', '/files/file-abc'],
    ['batches', 'GET', '/batches/batch_abc'],
    ['fine-tuning', 'POST', '/fine_tuning/jobs/ftjob-abc/cancel'],
  ] as const) {
    test(`${label}: a provider redirect is a 502, never passed on nor followed`, { timeout: 20_000 }, async () => {
      mock.enqueue({ status: 307, headers: { location: 'http://169.254.169.254/latest/meta-data/' }, body: '' });
      const result = await call(harness, method, path);
      assert.equal(result.status, 502);
      assert.equal(result.json.error?.code, 'AIGW_ERR_UPSTREAM_INVALID_RESPONSE');
      assert.match(result.json.error?.message ?? '', /redirects are not followed/);
      assert.equal(result.headers.get('location'), null);
      assert.equal(mock.requests.length, 1, 'the redirect was not followed');
    });
  }
});

describe('forwarded routes under the default egress policy (loopback denied)', () => {
  let harness: Harness;
  before(async () => {
    harness = await gatewayWith([], 'denied');
  });
  after(async () => harness.close());

  for (const [label, method, path] of [
    ['files', 'GET', '/files/file-abc'],
    ['batches', 'GET', '/batches/batch_abc'],
    ['fine-tuning', 'GET', '/fine_tuning/jobs/ftjob-abc'],
  ] as const) {
    test(`${label}: a denied destination is 400 AIGW_ERR_EGRESS_DENIED, nothing sent`, { timeout: 20_000 }, async () => {
      const result = await call(harness, method, path, undefined, { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url, authorization: `Bearer ${PROVIDER_KEY}` });
      assert.equal(result.status, 400);
      assert.equal(result.json.error?.code, 'AIGW_ERR_EGRESS_DENIED');
      assert.match(result.json.error?.message ?? '', /loopback/);
      assert.equal(mock.requests.length, 0);
    });
  }
});
