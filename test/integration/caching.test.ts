// Response caching end to end with a mock upstream that counts calls, and the openai SDK.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { RedisResponseCache } from '../../proxy/cache/redis-response-cache.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAI;
let harness: Harness;
let clock = 1_000_000;

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'What is the capital of France?' }] };

function state(): Record<string, unknown> {
  return baseState({
    providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: 'sk-m', customHost: mock.url }],
    configs: [
      { id: 'cached', config: { provider: '@mock', cache: { mode: 'simple', max_age: 60 } } },
      { id: 'semantic', config: { provider: '@mock', cache: { mode: 'semantic' } } },
    ],
    cache: { semanticThreshold: 0.8 },
  });
}

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({ state: state(), now: () => clock });
});
after(async () => {
  await harness.close();
  await mock.close();
});
beforeEach(() => mock.reset());

async function ask(body: Record<string, unknown>, headers: Record<string, string> = {}, config = 'cached') {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': config, ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, cache: response.headers.get('x-gateway-cache-status'), text: await response.text() };
}

describe('simple cache', () => {
  test('MISS then HIT; a HIT skips the upstream and returns the same answer', async () => {
    const body = { ...CHAT, messages: [{ role: 'user', content: 'hit me' }] };
    const first = await ask(body);
    assert.equal(first.cache, 'MISS');
    const second = await ask(body);
    assert.equal(second.cache, 'HIT');
    assert.equal(second.text, first.text);
    assert.equal(mock.requests.length, 1);
  });

  test('any body change misses; key order does not matter; stream/user do not change the key', async () => {
    await ask({ model: 'gpt-4o-mini', temperature: 0.5, messages: [{ role: 'user', content: 'order' }] });
    assert.equal((await ask({ messages: [{ content: 'order', role: 'user' }], temperature: 0.5, model: 'gpt-4o-mini' })).cache, 'HIT');
    assert.equal((await ask({ model: 'gpt-4o-mini', temperature: 0.5, user: 'someone', messages: [{ role: 'user', content: 'order' }] })).cache, 'HIT');
    assert.equal((await ask({ model: 'gpt-4o-mini', temperature: 0.6, messages: [{ role: 'user', content: 'order' }] })).cache, 'MISS');
    assert.equal((await ask({ model: 'gpt-4o', temperature: 0.5, messages: [{ role: 'user', content: 'order' }] })).cache, 'MISS');
  });

  test('metadata partitions the cache; a namespace partitions it and ignores metadata', async () => {
    const body = { ...CHAT, messages: [{ role: 'user', content: 'namespaces' }] };
    await ask(body, { 'x-gateway-metadata': '{"team":"a"}' });
    assert.equal((await ask(body, { 'x-gateway-metadata': '{"team":"b"}' })).cache, 'MISS');
    await ask(body, { 'x-gateway-cache-namespace': 'ns-1', 'x-gateway-metadata': '{"team":"a"}' });
    assert.equal((await ask(body, { 'x-gateway-cache-namespace': 'ns-1', 'x-gateway-metadata': '{"team":"z"}' })).cache, 'HIT');
    assert.equal((await ask(body, { 'x-gateway-cache-namespace': 'ns-2' })).cache, 'MISS');
  });

  test('max_age expiry', async () => {
    const body = { ...CHAT, messages: [{ role: 'user', content: 'expiry' }] };
    await ask(body);
    clock += 59_000;
    assert.equal((await ask(body)).cache, 'HIT');
    clock += 2_000;
    assert.equal((await ask(body)).cache, 'MISS');
  });

  test('force refresh calls the provider and replaces the entry', async () => {
    const body = { ...CHAT, messages: [{ role: 'user', content: 'refresh' }] };
    await ask(body);
    mock.setReplyText('a newer answer');
    try {
      const refreshed = await ask(body, { 'x-gateway-cache-force-refresh': 'true' });
      assert.equal(refreshed.cache, 'REFRESH');
      assert.match(refreshed.text, /a newer answer/);
      const after = await ask(body);
      assert.equal(after.cache, 'HIT');
      assert.match(after.text, /a newer answer/);
      assert.equal(mock.requests.length, 2);
    } finally {
      mock.setReplyText('Hello from the mock upstream.');
    }
  });

  test('errors are not cached', async () => {
    const body = { ...CHAT, messages: [{ role: 'user', content: 'errors' }] };
    mock.enqueue({ status: 500, body: { error: { message: 'boom' } } });
    assert.equal((await ask(body)).status, 500);
    const next = await ask(body);
    assert.equal(next.status, 200);
    assert.equal(next.cache, 'MISS');
  });

  test('without cache in the config the status is DISABLED', async () => {
    const response = await fetch(`${harness.gateway.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-mock' },
      body: JSON.stringify(CHAT),
    });
    assert.equal(response.headers.get('x-gateway-cache-status'), 'DISABLED');
    await response.arrayBuffer();
  });
});

describe('streams', () => {
  const client = () => harness.client({ 'x-gateway-config': 'cached' });

  test('a cached plain answer is replayed as SSE the openai SDK parses; a streamed answer is assembled and stored', async () => {
    const plainFirst = { ...CHAT, messages: [{ role: 'user' as const, content: 'replay a plain answer' }] };
    const plain = await client().chat.completions.create(plainFirst);
    const stream = await client().chat.completions.create({ ...plainFirst, stream: true, stream_options: { include_usage: true } }).withResponse();
    assert.equal(stream.response.headers.get('x-gateway-cache-status'), 'HIT');
    let text = '';
    let usage = 0;
    for await (const chunk of stream.data) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage?.total_tokens ?? usage;
    }
    assert.equal(text, plain.choices[0]?.message.content);
    assert.equal(usage, plain.usage?.total_tokens);

    const streamFirst = { ...CHAT, messages: [{ role: 'user' as const, content: 'store a streamed answer' }] };
    const live = await client().chat.completions.create({ ...streamFirst, stream: true });
    let liveText = '';
    for await (const chunk of live) liveText += chunk.choices[0]?.delta.content ?? '';
    mock.reset();
    const { data, response } = await client().chat.completions.create(streamFirst).withResponse();
    assert.equal(response.headers.get('x-gateway-cache-status'), 'HIT');
    assert.equal(data.choices[0]?.message.content, liveText);
    assert.equal(mock.requests.length, 0);
  });
});

describe('semantic cache', () => {
  test('a paraphrase is a SEMANTIC_HIT; another model misses', async () => {
    const original = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'what is the capital city of France' }] };
    await ask(original, {}, 'semantic');
    const paraphrase = await ask({ ...original, messages: [{ role: 'user', content: 'what is the capital city of france?' }] }, {}, 'semantic');
    assert.equal(paraphrase.cache, 'SEMANTIC_HIT');
    const otherModel = await ask({ ...original, model: 'gpt-4o', messages: [{ role: 'user', content: 'what is the capital city of france?' }] }, {}, 'semantic');
    assert.equal(otherModel.cache, 'MISS');
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(metrics, /aigateway_cache_requests_total\{status="SEMANTIC_HIT"\} [1-9]/);
    assert.match(metrics, /aigateway_cache_entries [1-9]/);
  });
});

describe('an unreachable Redis cache', () => {
  test('requests still succeed (MISS), counted as cache errors', async () => {
    const redisDown = await startHarness({ state: state(), cacheStore: new RedisResponseCache({ url: 'redis://127.0.0.1:1', commandTimeoutMs: 50 }) });
    try {
      const response = await fetch(`${redisDown.gateway.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'cached' },
        body: JSON.stringify(CHAT),
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('x-gateway-cache-status'), 'MISS');
      await response.arrayBuffer();
      assert.match(await (await fetch(`${redisDown.gateway.origin}/metrics`)).text(), /aigateway_cache_errors_total\{operation="get"\} [1-9]/);
    } finally {
      await redisDown.close();
    }
  });
});

describe('SDK sanity', () => {
  test('HIT answers parse with the official SDK', async () => {
    const client = harness.client({ 'x-gateway-config': 'cached' });
    const body = { ...CHAT, messages: [{ role: 'user' as const, content: 'sdk hit' }] };
    const first = await client.chat.completions.create(body);
    const second = await client.chat.completions.create(body);
    assert.deepEqual(second, first);
    assert.ok(second instanceof Object && !(second instanceof OpenAI.APIError));
  });
});
