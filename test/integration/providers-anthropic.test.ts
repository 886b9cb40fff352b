// Anthropic end to end: the official openai SDK → the real gateway → a mock Anthropic
// Messages API that rejects what the real one rejects.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { ANTHROPIC_REPLY_TEXT, startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { countMockTokens } from '../fixtures/mock-openai-payloads.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const KEY = 'sk-ant-api03-integration-key';
const MODEL = 'claude-sonnet-4-5-20250929';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const WEATHER_TOOL: ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

let mock: MockAnthropic;
let harness: Harness;

before(async () => {
  mock = await startMockAnthropic({ apiKey: KEY, toolInput: { city: 'Paris' } });
  harness = await startHarness({
    state: baseState({ providers: [{ slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: KEY, customHost: mock.url }] }),
  });
});

after(async () => {
  await harness.close();
  await mock.close();
});

beforeEach(() => mock.reset());

/** Way 3: an inline config with custom_host pointing at the mock. */
function viaConfig(): OpenAI {
  return harness.client({ 'x-gateway-config': JSON.stringify({ provider: 'anthropic', api_key: KEY, custom_host: mock.url }) });
}

/** Ways 1 + 4: x-gateway-provider + x-gateway-custom-host + Authorization. */
function viaHeaders(apiKey = KEY): OpenAI {
  return harness.client({ 'x-gateway-provider': 'anthropic', 'x-gateway-custom-host': mock.url }, { apiKey });
}

function lastUpstreamBody(): Record<string, unknown> {
  return mock.requests.at(-1)?.json as Record<string, unknown>;
}

describe('anthropic through the openai SDK', () => {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Say hi please' },
  ];

  test('chat, plain: translated both ways, x-api-key auth, usage counted, rate-limit headers passed', async () => {
    const { data, response } = await viaConfig().chat.completions.create({ model: MODEL, messages }).withResponse();
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.model, MODEL);
    assert.equal(data.choices[0]?.message.content, ANTHROPIC_REPLY_TEXT);
    assert.equal(data.choices[0]?.finish_reason, 'stop');
    const prompt = countMockTokens('Be brief. Say hi please');
    const completion = countMockTokens(ANTHROPIC_REPLY_TEXT);
    assert.deepEqual(data.usage, { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
    assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
    assert.equal(response.headers.get('anthropic-ratelimit-requests-remaining'), '49');
    assert.match(response.headers.get('request-id') ?? '', /^req_mock\d+$/);

    const upstream = mock.requests[0];
    assert.equal(upstream?.path, '/v1/messages');
    assert.equal(upstream?.headers['x-api-key'], KEY);
    assert.equal(upstream?.headers['anthropic-version'], '2023-06-01');
    assert.equal(upstream?.headers['authorization'], undefined);
    assert.equal(upstream?.headers['x-gateway-api-key'], undefined);
    assert.deepEqual(upstream?.json, { model: MODEL, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hi please' }], max_tokens: 4096 });
  });

  test('chat, streaming: the streamed text equals the plain text, usage arrives last, then [DONE]', async () => {
    const plain = await viaHeaders().chat.completions.create({ model: MODEL, messages });
    const stream = await viaHeaders().chat.completions.create({ model: MODEL, messages, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let chunks = 0;
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, plain.choices[0]?.message.content);
    assert.ok(chunks > 3, `expected several chunks, got ${chunks}`);
    assert.equal(finish, 'stop');
    assert.deepEqual(usage, plain.usage);
    assert.equal(lastUpstreamBody()['stream'], true);
    assert.equal(lastUpstreamBody()['stream_options'], undefined, 'OpenAI-only fields are not sent to Anthropic');

    const raw = await fetch(`${harness.gateway.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': TEST_GATEWAY_KEY,
        'x-gateway-provider': 'anthropic',
        'x-gateway-custom-host': mock.url,
        authorization: `Bearer ${KEY}`,
      },
      body: JSON.stringify({ model: MODEL, messages, stream: true }),
    });
    assert.match(raw.headers.get('content-type') ?? '', /text\/event-stream/);
    const body = await raw.text();
    assert.ok(body.endsWith('data: [DONE]\n\n'), 'the stream ends with data: [DONE]');
    assert.ok(!body.includes('event:'), 'Anthropic event names do not leak to the client');
  });

  test('tool-call round trip: the model asks for a tool, the client answers, the model replies', async () => {
    const client = viaHeaders();
    const question: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({ model: MODEL, messages: question, tools: [WEATHER_TOOL] });
    const choice = first.choices[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    const call = choice?.message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });

    // The same turn streamed: the tool-call deltas add up to the same call.
    const stream = await client.chat.completions.create({ model: MODEL, messages: question, tools: [WEATHER_TOOL], stream: true });
    let name = '';
    let args = '';
    let id = '';
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        id += delta.id ?? '';
        name += delta.function?.name ?? '';
        args += delta.function?.arguments ?? '';
      }
    }
    assert.equal(name, 'get_weather');
    assert.ok(id.startsWith('toolu_'));
    assert.deepEqual(JSON.parse(args), { city: 'Paris' });

    const final = await client.chat.completions.create({
      model: MODEL,
      tools: [WEATHER_TOOL],
      messages: [...question, choice!.message, { role: 'tool', tool_call_id: call.id, content: '18°C and sunny' }],
    });
    assert.equal(final.choices[0]?.finish_reason, 'stop');
    assert.equal(final.choices[0]?.message.content, 'The tool said: 18°C and sunny');
    const sent = lastUpstreamBody()['messages'] as Array<{ role: string; content: unknown }>;
    assert.deepEqual(sent.map((m) => m.role), ['user', 'assistant', 'user']);
    assert.deepEqual(sent[2]?.content, [{ type: 'tool_result', tool_use_id: call.id, content: '18°C and sunny' }]);
  });

  test('image input as a data: URL arrives as a base64 image block', async () => {
    const completion = await viaConfig().chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] }],
    });
    assert.equal(completion.choices[0]?.message.content, ANTHROPIC_REPLY_TEXT);
    const content = (lastUpstreamBody()['messages'] as Array<{ content: unknown }>)[0]?.content;
    assert.deepEqual(content, [
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
    ]);
  });

  test('max_tokens and stop map to finish_reason length and stop', async () => {
    const short = await viaConfig().chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    assert.equal(short.choices[0]?.finish_reason, 'length');
    assert.equal(short.choices[0]?.message.content, 'Hello from ');
    const stopped = await viaConfig().chat.completions.create({ model: MODEL, messages, stop: ['mock'] });
    assert.equal(stopped.choices[0]?.finish_reason, 'stop');
    assert.equal(stopped.choices[0]?.message.content, 'Hello from the ');
    assert.deepEqual(lastUpstreamBody()['stop_sequences'], ['mock']);
  });

  test('a saved provider by virtual key supplies key and host', async () => {
    const completion = await harness.client({ 'x-gateway-virtual-key': 'vk-claude' }).chat.completions.create({ model: MODEL, messages });
    assert.equal(completion.choices[0]?.message.content, ANTHROPIC_REPLY_TEXT);
    assert.equal(mock.requests[0]?.headers['x-api-key'], KEY);
  });
});

describe('anthropic errors', () => {
  const chat = { model: MODEL, messages: [{ role: 'user' as const, content: 'hi' }] };

  test('a wrong key: 401 with the provider named', async () => {
    const error = await viaHeaders('sk-ant-wrong').chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal(error.status, 401);
    assert.deepEqual(error.error, {
      message: 'invalid x-api-key',
      type: 'authentication_error',
      param: null,
      code: 'authentication_error',
      provider: 'anthropic',
    });
  });

  test('429 keeps its status and passes retry-after and rate-limit headers', async () => {
    mock.enqueue({
      status: 429,
      headers: { 'retry-after': '17', 'anthropic-ratelimit-requests-remaining': '0' },
      body: { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } },
    });
    const error = await viaHeaders().chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.RateLimitError);
    assert.equal(error.headers?.get('retry-after'), '17');
    assert.equal(error.headers?.get('anthropic-ratelimit-requests-remaining'), '0');
    assert.equal((error.error as { provider?: string }).provider, 'anthropic');
    assert.equal((error.error as { code?: string }).code, 'rate_limit_error');
  });

  test('529 overloaded keeps its status', async () => {
    mock.enqueue({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    const error = await viaHeaders().chat.completions.create(chat).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 529);
    assert.equal((error.error as { type?: string }).type, 'api_error');
  });

  test('an error event mid-stream reaches the SDK as an APIError', async () => {
    const frames = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    ];
    mock.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: frames.join('') });
    const stream = await viaHeaders().chat.completions.create({ ...chat, stream: true });
    const error = await (async () => {
      for await (const _chunk of stream) {
        // drain
      }
    })().catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.match(error.message, /Overloaded/);
  });

  test('an endpoint Anthropic lacks: 400 naming provider and endpoint, nothing sent upstream', async () => {
    const error = await viaHeaders().embeddings.create({ model: 'x', input: 'hi' }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.match(error.message, /anthropic/);
    assert.match(error.message, /\/v1\/embeddings/);
    assert.equal(mock.requests.length, 0);
  });

  test('what Anthropic cannot express is a 400 from the gateway (n > 1)', async () => {
    const error = await viaHeaders().chat.completions.create({ ...chat, n: 2 }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { param?: string }).param, 'n');
    assert.equal(mock.requests.length, 0);
  });
});

describe('the Anthropic mock rejects what the Messages API rejects', () => {
  const good = { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const post = async (body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: { error?: { type?: string; message?: string } } }> => {
    const response = await fetch(`${mock.url}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as { error?: { type?: string; message?: string } } };
  };

  test('missing x-api-key → 401, missing anthropic-version → 400', async () => {
    const noKey = await post(good, { 'x-api-key': '' });
    assert.equal(noKey.status, 401);
    assert.deepEqual(noKey.json.error, { type: 'authentication_error', message: 'x-api-key header is required' });
    const response = await fetch(`${mock.url}/messages`, { method: 'POST', headers: { 'x-api-key': KEY }, body: JSON.stringify(good) });
    assert.equal(response.status, 400);
    assert.match(await response.text(), /anthropic-version: header is required/);
  });

  test('missing max_tokens or messages, a system role, an OpenAI-only field, an orphan tool_result → 400', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ model: MODEL, messages: good.messages }, /max_tokens: Field required/],
      [{ model: MODEL, max_tokens: 10 }, /messages: Field required/],
      [{ ...good, messages: [{ role: 'system', content: 'x' }, ...good.messages] }, /Unexpected role "system"/],
      [{ ...good, stream_options: { include_usage: true } }, /stream_options: Extra inputs are not permitted/],
      [{ ...good, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] }] }, /corresponding `tool_use` block/],
    ];
    for (const [body, message] of cases) {
      const answer = await post(body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(answer.json.error?.type, 'invalid_request_error');
      assert.match(answer.json.error?.message ?? '', message);
    }
  });

  test('streams named events with pings, each frame split across writes', async () => {
    const response = await fetch(`${mock.url}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ ...good, stream: true }),
    });
    const text = await response.text();
    assert.match(text, /^event: message_start\ndata: \{/);
    assert.match(text, /event: ping\ndata: \{"type":"ping"\}\n\n/);
    assert.ok(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n'));
  });
});
