// The response cache on /v1/messages, end to end with the official @anthropic-ai/sdk: a
// mock Anthropic (native) and a mock OpenAI (translated) that count calls. Plain answers
// and streams are stored; a HIT is served as JSON or replayed as Anthropic events,
// whichever the request asks, and accounted at no cost.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ANTHROPIC_REPLY_TEXT, startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { eventually } from '../helpers/eventually.ts';

const KEY = 'sk-ant-api03-messages-caching-key';
const OPENAI_KEY = 'sk-openai-messages-caching-key';
const MODEL = 'claude-sonnet-4-6';
const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

let anthropic: MockAnthropic;
let openai: MockOpenAI;
let harness: Harness;
let clock = 1_000_000;
const records: RequestRecord[] = [];

before(async () => {
  anthropic = await startMockAnthropic({ apiKey: KEY, toolInput: { city: 'Paris' } });
  openai = await startMockOpenAI({ apiKey: OPENAI_KEY });
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: KEY, customHost: anthropic.url },
        { slug: 'oa', provider: 'openai', apiKey: OPENAI_KEY, customHost: openai.url },
      ],
      configs: [
        { id: 'claude-cached', config: { provider: '@claude', cache: { mode: 'simple', max_age: 60 } } },
        { id: 'claude-semantic', config: { provider: '@claude', cache: { mode: 'semantic' } } },
        { id: 'oa-cached', config: { provider: '@oa', cache: { mode: 'simple' } } },
        {
          id: 'claude-cached-guarded',
          config: {
            provider: '@claude',
            cache: { mode: 'simple' },
            output_guardrails: [{ id: 'no-forbidden', 'default.contains': { operator: 'none', words: ['forbidden'] }, deny: true }],
          },
        },
      ],
      cache: { semanticThreshold: 0.8 },
    }),
    now: () => clock,
    requestSink: (record) => records.push(record),
  });
});

after(async () => {
  await harness.close();
  await anthropic.close();
  await openai.close();
});

beforeEach(() => {
  anthropic.reset();
  openai.reset();
  records.length = 0;
});

function sdk(config: string, headers: Record<string, string> = {}): Anthropic {
  return new Anthropic({
    baseURL: harness.gateway.origin,
    apiKey: config === 'oa-cached' ? OPENAI_KEY : KEY,
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': config, ...headers },
  });
}

function params(content: string) {
  return { model: MODEL, max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user' as const, content }] };
}

/** A plain call: the Message and the cache status. */
async function create(client: Anthropic, body: Anthropic.MessageCreateParamsNonStreaming) {
  const { data, response } = await client.messages.create(body).withResponse();
  return { message: data, cache: response.headers.get('x-gateway-cache-status') };
}

/** A messages.stream() call: the final Message, the event types and the cache status. */
async function stream(client: Anthropic, body: Anthropic.MessageCreateParamsNonStreaming) {
  const events = client.messages.stream(body);
  const types: string[] = [];
  events.on('streamEvent', (event) => types.push(event.type));
  const { response } = await events.withResponse();
  // The SDK adds its own members to the accumulated Message (parsed_output, stop_details); the wire fields are compared.
  const { parsed_output: _parsed, ...message } = JSON.parse(JSON.stringify(await events.finalMessage())) as Anthropic.Message & { parsed_output?: unknown };
  return { message: message as Anthropic.Message, types, cache: response.headers.get('x-gateway-cache-status') };
}

/** The request record of the call that just finished. */
async function lastRecord(): Promise<RequestRecord> {
  await eventually(() => records.length > 0, 'a request record', { timeoutMs: 10_000 });
  return records.at(-1) as RequestRecord;
}

describe('/v1/messages simple cache (native Anthropic)', () => {
  test('plain MISS then HIT: the provider is called once; the HIT is the same Message, accounted as a HIT at no cost', async () => {
    const client = sdk('claude-cached');
    const first = await create(client, params('plain hit'));
    assert.equal(first.cache, 'MISS');
    const missRecord = await lastRecord();
    assert.equal(missRecord.cacheStatus, 'MISS');
    assert.ok((missRecord.costUsd ?? 0) > 0, `the MISS is priced (${String(missRecord.costUsd)})`);
    records.length = 0;
    const second = await create(client, params('plain hit'));
    assert.equal(second.cache, 'HIT');
    assert.deepEqual(second.message, first.message);
    assert.equal(anthropic.requests.length, 1);
    const hitRecord = await lastRecord();
    assert.equal(hitRecord.cacheStatus, 'HIT');
    assert.equal(hitRecord.costUsd, 0);
    assert.equal(hitRecord.status, 200);
  });

  test('messages.stream() MISS is assembled and stored; the stream HIT is replayed as Anthropic events; a plain request gets the same Message', async () => {
    const client = sdk('claude-cached');
    const live = await stream(client, params('stream hit'));
    assert.equal(live.cache, 'MISS');
    assert.deepEqual(live.message.content, [{ type: 'text', text: ANTHROPIC_REPLY_TEXT }]);
    const replay = await stream(client, params('stream hit'));
    assert.equal(replay.cache, 'HIT');
    assert.deepEqual(replay.message, live.message);
    assert.deepEqual(replay.types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const plain = await create(client, params('stream hit'));
    assert.equal(plain.cache, 'HIT');
    assert.deepEqual(plain.message.content, live.message.content);
    assert.deepEqual(plain.message.usage, live.message.usage);
    assert.equal(anthropic.requests.length, 1);
  });

  test('a plain answer with a tool call is replayed to a stream request with input_json_delta', async () => {
    const client = sdk('claude-cached');
    const body = { ...params('weather in Paris?'), tools: [WEATHER_TOOL] };
    const plain = await create(client, body);
    assert.equal(plain.message.stop_reason, 'tool_use');
    const replay = await stream(client, body);
    assert.equal(replay.cache, 'HIT');
    assert.deepEqual(replay.message, plain.message);
    assert.ok(replay.types.filter((type) => type === 'content_block_start').length === 2);
    assert.equal(anthropic.requests.length, 1);
  });

  test('the key covers model, system, messages, tools, max_tokens and the anthropic-beta header; key order does not count', async () => {
    const client = sdk('claude-cached');
    await create(client, params('keys'));
    assert.equal((await create(client, { messages: [{ content: 'keys', role: 'user' }], system: 'Be brief.', max_tokens: 256, model: MODEL })).cache, 'HIT');
    assert.equal((await create(client, { ...params('keys'), system: 'Be verbose.' })).cache, 'MISS');
    assert.equal((await create(client, { ...params('keys'), max_tokens: 255 })).cache, 'MISS');
    assert.equal((await create(client, { ...params('keys'), model: 'claude-haiku-4-5' })).cache, 'MISS');
    assert.equal((await create(client, { ...params('keys'), tools: [WEATHER_TOOL] })).cache, 'MISS');
    const beta = await client.messages.create(params('keys'), { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } }).withResponse();
    assert.equal(beta.response.headers.get('x-gateway-cache-status'), 'MISS');
  });

  test('namespaces: metadata partitions the cache; a namespace ignores metadata; another namespace misses', async () => {
    const body = params('namespaces');
    await create(sdk('claude-cached', { 'x-gateway-metadata': '{"team":"a"}' }), body);
    assert.equal((await create(sdk('claude-cached', { 'x-gateway-metadata': '{"team":"b"}' }), body)).cache, 'MISS');
    await create(sdk('claude-cached', { 'x-gateway-cache-namespace': 'ns-1', 'x-gateway-metadata': '{"team":"a"}' }), body);
    assert.equal((await create(sdk('claude-cached', { 'x-gateway-cache-namespace': 'ns-1', 'x-gateway-metadata': '{"team":"z"}' }), body)).cache, 'HIT');
    assert.equal((await create(sdk('claude-cached', { 'x-gateway-cache-namespace': 'ns-2' }), body)).cache, 'MISS');
  });

  test('force refresh calls the provider and replaces the entry', async () => {
    const body = params('refresh');
    await create(sdk('claude-cached'), body);
    anthropic.enqueue({ text: 'A refreshed answer.' });
    const refreshed = await create(sdk('claude-cached', { 'x-gateway-cache-force-refresh': 'true' }), body);
    assert.equal(refreshed.cache, 'REFRESH');
    assert.deepEqual(refreshed.message.content, [{ type: 'text', text: 'A refreshed answer.' }]);
    const next = await stream(sdk('claude-cached'), body);
    assert.equal(next.cache, 'HIT');
    assert.deepEqual(next.message.content, [{ type: 'text', text: 'A refreshed answer.' }]);
    assert.equal(anthropic.requests.length, 2);
  });

  test('max_age: an entry expires', async () => {
    const body = params('expiry');
    await create(sdk('claude-cached'), body);
    clock += 59_000;
    assert.equal((await create(sdk('claude-cached'), body)).cache, 'HIT');
    clock += 2_000;
    assert.equal((await create(sdk('claude-cached'), body)).cache, 'MISS');
  });

  test('errors are not cached; count_tokens is not cached (DISABLED)', async () => {
    anthropic.enqueue({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    const error = await create(sdk('claude-cached'), params('errors')).catch((caught: unknown) => caught);
    assert.ok(error instanceof Anthropic.APIError);
    assert.equal((await create(sdk('claude-cached'), params('errors'))).cache, 'MISS');
    const counted = await sdk('claude-cached').messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'count' }] }).withResponse();
    assert.equal(counted.response.headers.get('x-gateway-cache-status'), 'DISABLED');
  });
});

describe('/v1/messages cache with output guardrails', () => {
  const headers = { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'claude-cached-guarded' };
  async function send(body: Record<string, unknown>) {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: response.status, cache: response.headers.get('x-gateway-cache-status'), text: await response.text() };
  }

  for (const stream of [false, true]) {
    test(`${stream ? 'stream' : 'plain'}: an answer the checks deny is not stored (a hit would skip them); one they pass is`, async () => {
      const body = { ...params(`guarded ${String(stream)}`), stream };
      anthropic.enqueue({ text: 'A forbidden answer.' });
      const denied = await send(body);
      assert.equal(denied.status, 446);
      assert.equal(denied.cache, 'MISS');
      const passed = await send(body);
      assert.equal(passed.status, 200);
      assert.equal(passed.cache, 'MISS', 'the denied answer was not stored');
      assert.match(passed.text, /Claude\./);
      const hit = await send(body);
      assert.equal(hit.cache, 'HIT');
      assert.doesNotMatch(hit.text, /forbidden/);
      assert.equal(anthropic.requests.length, 2);
    });
  }
});

describe('/v1/messages semantic cache', () => {
  test('a paraphrase of the last message is a SEMANTIC_HIT; another system prompt misses', async () => {
    const client = sdk('claude-semantic');
    await create(client, params('what is the capital city of France'));
    const paraphrase = await create(client, params('what is the capital city of france?'));
    assert.equal(paraphrase.cache, 'SEMANTIC_HIT');
    assert.equal(anthropic.requests.length, 1);
    const otherSystem = await create(client, { ...params('what is the capital city of france?'), system: 'Answer in French.' });
    assert.equal(otherSystem.cache, 'MISS');
  });
});

describe('/v1/messages cache on a translated (OpenAI-format) provider', () => {
  test('the Anthropic-shaped answer is stored: a stream MISS, then plain and stream HITs', async () => {
    const client = sdk('oa-cached');
    const body = { ...params('translated'), model: 'gpt-4o-mini' };
    const live = await stream(client, body);
    assert.equal(live.cache, 'MISS');
    assert.deepEqual(live.message.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    const plain = await create(client, body);
    assert.equal(plain.cache, 'HIT');
    assert.equal(plain.message.type, 'message');
    assert.deepEqual(plain.message.content, live.message.content);
    assert.deepEqual(plain.message.usage, live.message.usage);
    const replay = await stream(client, body);
    assert.equal(replay.cache, 'HIT');
    assert.deepEqual(replay.message, live.message);
    assert.equal(openai.requests.length, 1);
  });
});
