// The inference endpoints end to end: the official openai SDK → the real gateway → a mock
// OpenAI upstream speaking the real wire format.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const PROVIDER_KEY = 'sk-upstream-secret-key-1234';

let mock: MockOpenAI;
let harness: Harness;
let viaHost: Record<string, string>;

before(async () => {
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: PROVIDER_KEY, customHost: mock.url }],
      configs: [{ id: 'saved-mock', config: { provider: '@mock' } }],
    }),
  });
  viaHost = { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url };
});

after(async () => {
  await harness.close();
  await mock.close();
});

beforeEach(() => mock.reset());

function clientViaHost(extra: Record<string, string> = {}): OpenAI {
  return harness.client({ ...viaHost, ...extra }, { apiKey: PROVIDER_KEY });
}

describe('inference endpoints through the openai SDK', () => {
  test('chat completion, plain', async () => {
    const completion = await clientViaHost().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
    assert.equal(mock.requests[0]?.path, '/v1/chat/completions');
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${PROVIDER_KEY}`);
  });

  test('chat completion, streaming, chunk by chunk', async () => {
    const stream = await clientViaHost().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, DEFAULT_REPLY_TEXT);
    assert.ok(chunks > 2, `expected several chunks, got ${chunks}`);
  });

  test('completions, plain and streaming ending in [DONE]', async () => {
    const client = clientViaHost();
    const plain = await client.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Say hi' });
    assert.equal(plain.object, 'text_completion');
    assert.equal(plain.choices[0]?.text, DEFAULT_REPLY_TEXT);

    const stream = await client.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Say hi', stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, DEFAULT_REPLY_TEXT);

    // The SDK hides the terminator, so read the raw stream as well.
    const raw = await fetch(`${harness.gateway.url}/completions`, {
      method: 'POST',
      headers: rawHeaders(),
      body: JSON.stringify({ model: 'gpt-3.5-turbo-instruct', prompt: 'Say hi', stream: true }),
    });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get('content-type') ?? '', /text\/event-stream/);
    const body = await raw.text();
    assert.ok(body.trimEnd().endsWith('data: [DONE]'), 'stream ends with data: [DONE]');
  });

  test('embeddings (the SDK asks for base64 and decodes it)', async () => {
    const result = await clientViaHost().embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    assert.equal(result.object, 'list');
    assert.equal(result.data.length, 2);
    assert.ok(Array.isArray(result.data[0]?.embedding));
    assert.equal((mock.requests[0]?.json as { encoding_format?: string }).encoding_format, 'base64');
  });

  test('responses, plain and streaming', async () => {
    const client = clientViaHost();
    const response = await client.responses.create({ model: 'o1-pro', input: 'hello' });
    assert.equal(response.object, 'response');
    assert.equal(response.output_text, DEFAULT_REPLY_TEXT);

    const stream = client.responses.stream({ model: 'gpt-4.1-mini', input: 'hello' });
    const events: string[] = [];
    for await (const event of stream) events.push(event.type);
    const final = await stream.finalResponse();
    assert.equal(final.output_text, DEFAULT_REPLY_TEXT);
    assert.equal(events[0], 'response.created');
    assert.equal(events.at(-1), 'response.completed');
  });
});

describe('provider selection', () => {
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };

  test('1: x-gateway-provider + Authorization (custom host as the OpenAI-compatible host)', async () => {
    const completion = await clientViaHost().chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
  });

  test('1: x-gateway-provider as an @slug uses the saved credentials', async () => {
    const { data, response } = await harness
      .client({ 'x-gateway-provider': '@mock' }, { apiKey: 'ignored' })
      .chat.completions.create(chat)
      .withResponse();
    assert.equal(data.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${PROVIDER_KEY}`);
  });

  test('2: x-gateway-virtual-key', async () => {
    const completion = await harness.client({ 'x-gateway-virtual-key': 'vk-mock' }).chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${PROVIDER_KEY}`);
  });

  test('3: x-gateway-config inline JSON, in each single-target form', async () => {
    const forms = [
      { provider: 'openai', api_key: PROVIDER_KEY, custom_host: mock.url },
      { virtual_key: 'vk-mock' },
      { provider: '@mock' },
      { provider: 'vllm', custom_host: mock.url, api_key: PROVIDER_KEY },
    ];
    for (const config of forms) {
      const completion = await harness.client({ 'x-gateway-config': JSON.stringify(config) }).chat.completions.create(chat);
      assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT, JSON.stringify(config));
    }
    assert.equal(mock.requests.length, forms.length);
  });

  test('3: x-gateway-config naming a saved config', async () => {
    const completion = await harness.client({ 'x-gateway-config': 'saved-mock' }).chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
  });

  test('4: x-gateway-custom-host + x-gateway-provider with any provider name', async () => {
    const completion = await harness
      .client({ 'x-gateway-provider': 'my-own-llm', 'x-gateway-custom-host': `${mock.url}/` }, { apiKey: PROVIDER_KEY })
      .chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
    assert.equal(mock.requests[0]?.path, '/v1/chat/completions');
  });

  test('a config of only settings takes the provider from the headers', async () => {
    const completion = await clientViaHost({ 'x-gateway-config': JSON.stringify({ request_timeout: 5000 }) }).chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
  });

  test('no provider at all → 400 naming x-gateway-virtual-key', async () => {
    const error = await harness.client().completions.create({ model: 'm', prompt: 'p' }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { param?: string }).param, 'x-gateway-virtual-key');
    assert.equal(mock.requests.length, 0);
  });

  test('unknown saved config → 404; invalid inline config → 400 naming the path', async () => {
    const unknown = await harness.client({ 'x-gateway-config': 'nope' }).chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(unknown instanceof OpenAI.NotFoundError);
    const invalid = await harness
      .client({ 'x-gateway-config': JSON.stringify({ retry: { attempts: 9 } }) })
      .chat.completions.create(chat)
      .catch((e: unknown) => e);
    assert.ok(invalid instanceof OpenAI.BadRequestError);
    assert.match(invalid.message, /retry\.attempts/);
    const badJson = await harness.client({ 'x-gateway-config': '{not json' }).chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(badJson instanceof OpenAI.BadRequestError);
  });

  test('unknown virtual key and unknown slug → 404; unsupported provider name → 400', async () => {
    const vk = await harness.client({ 'x-gateway-virtual-key': 'vk-nope' }).chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(vk instanceof OpenAI.NotFoundError);
    const slug = await harness.client({ 'x-gateway-provider': '@nope' }).chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(slug instanceof OpenAI.NotFoundError);
    const name = await harness.client({ 'x-gateway-provider': 'not-a-provider' }).chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(name instanceof OpenAI.BadRequestError);
    assert.equal(mock.requests.length, 0);
  });
});

function rawHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-gateway-api-key': TEST_GATEWAY_KEY,
    authorization: `Bearer ${PROVIDER_KEY}`,
    ...viaHost,
    ...extra,
  };
}
