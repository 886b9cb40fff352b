// Issue 25, "Policies apply to what a request resolves to": rate limits, token limits,
// guardrails and cost hold on the forwarded OpenAI routes too, policy conditions match the
// provider and model a request resolves to (inline strategy wrappers, override_params.model),
// guardrails attached to a saved provider (or by a guardrail policy to a key) run however the
// provider is named, and token limits hold under a parallel burst (reserve, then settle) in
// memory and in Redis.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { RedisCounterStore } from '../../proxy/ratelimit/redis-counter-store.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { startMockOpenAIForwarded, type MockOpenAIForwarded } from '../fixtures/mock-openai-forwarded.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { PREFIX, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';

const FWD_KEY = 'sk-forwarded-provider-key-123';
const SECOND_KEY = 'gw-second-key-000000-0123456789a';
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

let mock: MockOpenAI;
let forwarded: MockOpenAIForwarded;
before(async () => {
  mock = await startMockOpenAI();
  forwarded = await startMockOpenAIForwarded(FWD_KEY);
});
after(async () => {
  await mock.close();
  await forwarded.close();
});

function stateWith(extra: Record<string, unknown>, providerExtra: Record<string, unknown> = {}): Record<string, unknown> {
  const state = baseState({
    providers: [
      { slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: 'sk-m', customHost: mock.url, ...providerExtra },
      { slug: 'fwd', provider: 'openai', virtualKey: 'vk-fwd', apiKey: FWD_KEY, customHost: forwarded.url },
    ],
    ...extra,
  });
  (state['apiKeys'] as unknown[]).push({ id: 'second', key: SECOND_KEY, workspace: 'team-b' });
  return state;
}

async function post(harness: Harness, path: string, body: unknown, headers: Record<string, string>, key = TEST_GATEWAY_KEY): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function statuses(n: number, send: () => Promise<{ status: number }>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
}

describe('forwarded routes meet rate limits and cost', () => {
  let harness: Harness;
  const records: RequestRecord[] = [];
  before(async () => {
    harness = await startHarness({
      state: stateWith({
        rateLimitPolicies: [
          { id: 'three-a-minute', type: 'requests', unit: 'rpm', value: 3, conditions: [{ key: 'api_key', value: 'test' }], group_by: [{ key: 'api_key' }] },
        ],
        modelPrices: [{ model: 'gpt-image-test', inputPerMillion: 5, outputPerMillion: 40 }],
      }),
      requestSink: (record) => records.push(record),
    });
  });
  after(async () => harness.close());

  test('images/generations under a 3-per-minute policy: the 4th call is a 429 and never reaches the provider', async () => {
    forwarded.reset();
    const send = () => post(harness, '/images/generations', { model: 'dall-e-3', prompt: 'a cat' }, { 'x-gateway-virtual-key': 'vk-fwd' });
    assert.deepEqual(await statuses(4, send), [200, 200, 200, 429]);
    assert.equal(forwarded.requests.length, 3);
    const refused = await send();
    assert.equal((refused.json['error'] as { code?: string }).code, 'AIGW_ERR_RATE_LIMITED');
  });

  test("a forwarded answer's usage is recorded and priced", async () => {
    forwarded.enqueue({
      status: 200,
      body: { created: 1, data: [{ b64_json: 'cG5n' }], usage: { input_tokens: 1000, output_tokens: 2000, total_tokens: 3000 } },
    });
    const answer = await post(harness, '/images/generations', { model: 'gpt-image-test', prompt: 'a dog' }, { 'x-gateway-virtual-key': 'vk-fwd' }, SECOND_KEY);
    assert.equal(answer.status, 200);
    const record = await eventually(() => records.find((r) => r.route === '/v1/images/generations' && r.model === 'gpt-image-test'), 'the request record');
    assert.equal(record.totalTokens, 3000);
    assert.ok(record.costUsd !== undefined && Math.abs(record.costUsd - (1000 * 5 + 2000 * 40) / 1e6) < 1e-9, `cost ${record.costUsd}`);
  });
});

describe('policy conditions match the resolved provider and model', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({
      state: stateWith({
        rateLimitPolicies: [
          { id: 'openai-two', type: 'requests', unit: 'rpm', value: 2, conditions: [{ key: 'provider', value: 'openai' }, { key: 'api_key', value: 'test' }], group_by: [{ key: 'api_key' }] },
          { id: 'gpt4o-two', type: 'requests', unit: 'rpm', value: 2, conditions: [{ key: 'model', value: 'gpt-4o' }, { key: 'api_key', value: 'second' }], group_by: [{ key: 'api_key' }] },
        ],
      }),
    });
  });
  after(async () => harness.close());

  test('a provider wrapped in an inline fallback strategy is still matched by a provider condition', async () => {
    const wrapped = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@mock' }] });
    const send = () => post(harness, '/chat/completions', CHAT, { 'x-gateway-config': wrapped });
    assert.deepEqual(await statuses(3, send), [200, 200, 429]);
  });

  test('override_params.model is matched by a model condition, not the body model', async () => {
    mock.reset();
    const overridden = JSON.stringify({ provider: '@mock', override_params: { model: 'gpt-4o' } });
    const send = () => post(harness, '/chat/completions', CHAT, { 'x-gateway-config': overridden }, SECOND_KEY);
    assert.deepEqual(await statuses(3, send), [200, 200, 429]);
    assert.equal((mock.requests[0]?.json as { model?: string }).model, 'gpt-4o');
  });
});

describe('guardrails attached to a provider, or to a key, hold however the provider is named', () => {
  let harness: Harness;
  const secret = { ...CHAT, messages: [{ role: 'user', content: 'tell me the secret' }] };
  before(async () => {
    harness = await startHarness({
      state: stateWith(
        {
          guardrails: [
            { id: 'no-secrets', checks: [{ id: 'default.regexMatch', parameters: { rule: 'secret', not: true } }], deny: true },
            { id: 'no-bananas', checks: [{ id: 'default.regexMatch', parameters: { rule: 'banana', not: true } }], deny: true },
          ],
          configs: [{ id: 'guarded', config: { provider: '@mock', input_guardrails: ['no-secrets'] } }],
          guardrailPolicies: [{ id: 'team-b-fruit', conditions: [{ key: 'workspace_id', value: 'team-b' }], input_guardrails: ['no-bananas'] }],
        },
        { input_guardrails: ['no-secrets'] },
      ),
    });
  });
  after(async () => harness.close());

  test('via the saved config, the provider slug, its virtual key and an inline strategy: 446 every time', async () => {
    mock.reset();
    const ways: Array<Record<string, string>> = [
      { 'x-gateway-config': 'guarded' },
      { 'x-gateway-provider': '@mock' },
      { 'x-gateway-virtual-key': 'vk-mock' },
      { 'x-gateway-config': JSON.stringify({ strategy: { mode: 'loadbalance' }, targets: [{ provider: '@mock' }] }) },
    ];
    for (const headers of ways) {
      const answer = await post(harness, '/chat/completions', secret, headers);
      assert.equal(answer.status, 446, JSON.stringify(headers));
      assert.equal((answer.json['error'] as { code?: string }).code, 'AIGW_ERR_GUARDRAIL_DENIED');
    }
    assert.equal(mock.requests.length, 0, 'the provider never saw the blocked text');
    assert.equal((await post(harness, '/chat/completions', CHAT, { 'x-gateway-provider': '@mock' })).status, 200);
  });

  test('a guardrail policy on a workspace holds for its keys only', async () => {
    const fruit = { ...CHAT, messages: [{ role: 'user', content: 'a banana' }] };
    assert.equal((await post(harness, '/chat/completions', fruit, { 'x-gateway-virtual-key': 'vk-mock' }, SECOND_KEY)).status, 446);
    assert.equal((await post(harness, '/chat/completions', fruit, { 'x-gateway-virtual-key': 'vk-mock' })).status, 200);
  });

  test('a forwarded JSON route meets the guardrails of the config it names', async () => {
    forwarded.reset();
    const blocked = await post(harness, '/moderations', { model: 'omni-moderation-latest', input: 'the secret plan' }, { 'x-gateway-config': JSON.stringify({ provider: '@fwd', input_guardrails: ['no-secrets'] }) });
    assert.equal(blocked.status, 446);
    assert.equal(forwarded.requests.length, 0);
  });
});

describe('guardrails attached to a provider hold on its forwarded routes', () => {
  let harness: Harness;
  before(async () => {
    const state = stateWith({ guardrails: [{ id: 'no-secrets', checks: [{ id: 'default.regexMatch', parameters: { rule: 'secret', not: true } }], deny: true }] });
    (state['providers'] as Array<Record<string, unknown>>)[1]!['input_guardrails'] = ['no-secrets'];
    harness = await startHarness({ state });
  });
  after(async () => harness.close());

  test('a JSON body with the blocked text is a 446; a clean one passes; a multipart body is refused', async () => {
    forwarded.reset();
    const blocked = await post(harness, '/images/generations', { model: 'dall-e-3', prompt: 'draw the secret' }, { 'x-gateway-virtual-key': 'vk-fwd' });
    assert.equal(blocked.status, 446);
    assert.equal(forwarded.requests.length, 0);
    assert.equal((await post(harness, '/images/generations', { model: 'dall-e-3', prompt: 'draw a cat' }, { 'x-gateway-virtual-key': 'vk-fwd' })).status, 200);
    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob([Buffer.from('the secret')]), 'a.mp3');
    const multipart = await fetch(`${harness.gateway.url}/audio/transcriptions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-fwd' },
      body: form,
    });
    assert.equal(multipart.status, 415);
    assert.equal(((await multipart.json()) as { error: { code: string } }).error.code, 'AIGW_ERR_UNSUPPORTED_MEDIA_TYPE');
    assert.equal(forwarded.requests.length, 1);
  });
});

describe('an attachment naming an unknown guardrail fails closed', () => {
  test('requests that would meet it answer 400 (never pass unchecked); the load reports it; others serve', async () => {
    const harness = await startHarness({ state: stateWith({}, { input_guardrails: ['no-such-guardrail'] }) });
    try {
      mock.reset();
      const refused = await post(harness, '/chat/completions', CHAT, { 'x-gateway-virtual-key': 'vk-mock' });
      assert.equal(refused.status, 400);
      assert.equal((refused.json['error'] as { code?: string }).code, 'AIGW_ERR_INVALID_CONFIG');
      assert.match(String((refused.json['error'] as { message?: string }).message), /no-such-guardrail/);
      assert.equal(mock.requests.length, 0);
      const warning = harness.logs.find((line) => line['msg'] === 'state warning');
      assert.match(String(warning?.['warning']), /providers\[0\]\.input_guardrails\[0\]: unknown guardrail "no-such-guardrail"/);
      assert.equal((await post(harness, '/images/generations', { model: 'dall-e-3', prompt: 'a cat' }, { 'x-gateway-virtual-key': 'vk-fwd' })).status, 200);
    } finally {
      await harness.close();
    }
  });
});

/**
 * 30 parallel chat requests against a 50-token policy; returns the statuses. The provider
 * holds every answer until all 30 were admitted or refused, so none settles mid-burst.
 */
async function burst(harness: Harness): Promise<number[]> {
  mock.reset();
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  for (let i = 0; i < 30; i++) mock.enqueue({ until: gate });
  const refused: number[] = [];
  const body = { ...CHAT, max_tokens: 5 };
  const pending = Array.from({ length: 30 }, () =>
    post(harness, '/chat/completions', body, { 'x-gateway-virtual-key': 'vk-mock' }).then(({ status }) => {
      if (status !== 200) refused.push(status);
      return status;
    }),
  );
  await eventually(() => mock.requests.length + refused.length === 30, 'every request admitted or refused');
  release();
  const codes = await Promise.all(pending);
  mock.reset();
  return codes;
}

function assertBurstHeld(codes: number[]): void {
  const admitted = codes.filter((status) => status === 200).length;
  // Each request reserves its prompt estimate + max_tokens (well over 10 tokens): at most 5 fit in 50.
  assert.ok(admitted >= 1 && admitted <= 5, `admitted ${admitted} of 30: ${codes.join(',')}`);
  assert.equal(codes.filter((status) => status === 429).length, 30 - admitted);
}

function tokenPolicy(): Record<string, unknown> {
  return { id: `fifty-tokens-${randomUUID()}`, type: 'tokens', unit: 'rpm', value: 50, conditions: [{ key: 'api_key', value: 'test' }], group_by: [{ key: 'api_key' }] };
}

describe('token limits hold under a parallel burst (reserve, then settle)', () => {
  test('memory store: 30 parallel requests against a 50-token policy do not all pass', async () => {
    const harness = await startHarness({ state: stateWith({ rateLimitPolicies: [tokenPolicy()] }) });
    try {
      assertBurstHeld(await burst(harness));
    } finally {
      await harness.close();
    }
  });

  test('Redis store: the same burst is held', { skip }, async () => {
    const store = new RedisCounterStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 2_000 });
    const harness = await startHarness({ state: stateWith({ rateLimitPolicies: [tokenPolicy()] }), counterStore: store, rateLimitFailMode: 'closed' });
    try {
      assertBurstHeld(await burst(harness));
    } finally {
      await harness.close();
      await store.close();
    }
  });

  test('settling gives back what an answer did not use: sequential small requests keep passing', async () => {
    const policy = { ...tokenPolicy(), value: 2000 };
    const harness = await startHarness({ state: stateWith({ rateLimitPolicies: [policy] }) });
    try {
      // Each reserves prompt + 4096 (no max_tokens) but spends a few dozen tokens.
      const send = () => post(harness, '/chat/completions', CHAT, { 'x-gateway-virtual-key': 'vk-mock' });
      const first = await send();
      assert.equal(first.status, 200);
      // The settlement runs when the first request is accounted; then there is room again.
      await eventually(async () => (await send()).status === 200, 'room after the settlement');
    } finally {
      await harness.close();
    }
  });
});
