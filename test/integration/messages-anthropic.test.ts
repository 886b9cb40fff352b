// /v1/messages end to end with the official @anthropic-ai/sdk: the real gateway in front of
// a mock Anthropic Messages API (native: bytes and events unchanged) and a mock OpenAI API
// (translated both ways), with the pipeline's retries, auth, guardrails and accounting.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ANTHROPIC_REPLY_TEXT, anthropicSseFrame, startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { countMockTokens } from '../fixtures/mock-openai-payloads.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { eventually } from '../helpers/eventually.ts';

const KEY = 'sk-ant-api03-messages-ingress-key';
const OPENAI_KEY = 'sk-openai-messages-ingress-key';
const MODEL = 'claude-sonnet-4-6';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

let anthropic: MockAnthropic;
let openai: MockOpenAI;
let harness: Harness;
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
        {
          id: 'claude-retry',
          config: { provider: '@claude', retry: { attempts: 2, on_status_codes: [529] } },
        },
        {
          id: 'deny-claude-output',
          config: {
            provider: '@claude',
            output_guardrails: [{ id: 'no-mock', 'default.contains': { operator: 'none', words: ['mock Claude'] }, deny: true }],
          },
        },
        {
          id: 'claude-then-openai',
          config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@claude' }, { provider: '@oa', override_params: { model: 'gpt-4o-mini' } }] },
        },
        {
          id: 'oa-checked',
          config: { provider: '@oa', output_guardrails: [{ id: 'flag-mock', 'default.contains': { operator: 'none', words: ['mock upstream'] } }] },
        },
        {
          id: 'claude-checked',
          config: { provider: '@claude', output_guardrails: [{ id: 'flag-claude', 'default.contains': { operator: 'none', words: ['mock Claude'] } }] },
        },
        {
          id: 'deny-secret',
          config: {
            provider: '@claude',
            input_guardrails: [{ id: 'no-secrets', 'default.contains': { operator: 'none', words: ['top-secret'] }, deny: true }],
          },
        },
      ],
    }),
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

/** The SDK as Claude Code uses it: baseURL = the gateway, gateway headers as custom headers. */
function sdk(headers: Record<string, string>, options: { apiKey?: string | null; authToken?: string | null } = {}): Anthropic {
  return new Anthropic({
    baseURL: harness.gateway.origin,
    apiKey: options.apiKey === undefined ? KEY : options.apiKey,
    authToken: options.authToken ?? null,
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
  });
}

const toAnthropic = { 'x-gateway-provider': 'anthropic', 'x-gateway-custom-host': '' };
function viaHeaders(): Anthropic {
  return sdk({ ...toAnthropic, 'x-gateway-custom-host': anthropic.url });
}

function viaOpenAI(): Anthropic {
  return sdk({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': openai.url }, { apiKey: OPENAI_KEY });
}

async function lastRecord(): Promise<RequestRecord> {
  await eventually(() => records.length > 0, 'a request record', { timeoutMs: 10_000 });
  return records.at(-1) as RequestRecord;
}

describe('/v1/messages to Anthropic (native)', () => {
  test('plain: the body reaches Anthropic byte for byte; version and betas forwarded; answer unchanged', async () => {
    const params = {
      model: MODEL,
      max_tokens: 256,
      system: [{ type: 'text' as const, text: 'You are terse.', cache_control: { type: 'ephemeral' as const } }],
      metadata: { user_id: 'user-42' },
      messages: [
        {
          role: 'user' as const,
          content: [
            { type: 'text' as const, text: 'Describe this' },
            { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: PNG } },
          ],
        },
      ],
    };
    const { data, response } = await viaHeaders()
      .messages.create(params, { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31,interleaved-thinking-2025-05-14' } })
      .withResponse();
    assert.equal(data.type, 'message');
    assert.deepEqual(data.content, [{ type: 'text', text: ANTHROPIC_REPLY_TEXT }]);
    assert.equal(data.stop_reason, 'end_turn');
    assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
    assert.equal(response.headers.get('anthropic-ratelimit-requests-remaining'), '49');

    const upstream = anthropic.requests[0];
    assert.equal(upstream?.path, '/v1/messages');
    assert.deepEqual(upstream?.json, params);
    assert.equal(upstream?.headers['x-api-key'], KEY);
    assert.equal(upstream?.headers['anthropic-version'], '2026-10-21', "the client's version");
    assert.equal(upstream?.headers['anthropic-beta'], 'prompt-caching-2024-07-31,interleaved-thinking-2025-05-14');
    assert.equal(upstream?.headers['authorization'], undefined);
    assert.equal(upstream?.headers['x-gateway-api-key'], undefined);
  });

  test('messages.stream(): every event arrives unchanged and in order; finalMessage equals the plain answer', async () => {
    const params = { model: MODEL, max_tokens: 256, messages: [{ role: 'user' as const, content: 'Say hi' }] };
    const stream = viaHeaders().messages.stream(params);
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, [{ type: 'text', text: ANTHROPIC_REPLY_TEXT }]);
    assert.equal(types[0], 'message_start');
    assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
    const record = await lastRecord();
    const input = countMockTokens('Say hi');
    const output = countMockTokens(ANTHROPIC_REPLY_TEXT);
    // message_start's input tokens and message_delta's output tokens are both accounted.
    assert.equal(record.promptTokens, input);
    assert.equal(record.completionTokens, output);
    assert.equal(record.provider, 'anthropic');
    assert.equal(record.model, MODEL);
  });

  test('stream bytes: the client receives exactly the SSE text Anthropic sent', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': KEY, 'x-gateway-api-key': TEST_GATEWAY_KEY, ...toAnthropic, 'x-gateway-custom-host': anthropic.url },
      body: JSON.stringify({ model: MODEL, max_tokens: 64, stream: true, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Weather in Paris?' }] }),
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /^event: message_start\ndata: /);
    assert.match(text, /event: ping\ndata: \{"type":"ping"\}\n\n/);
    assert.match(text, /event: content_block_delta\ndata: \{"type":"content_block_delta","index":1,"delta":\{"type":"input_json_delta","partial_json":"/);
    assert.match(text, /event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/);
    assert.doesNotMatch(text, /\[DONE\]|chat\.completion/);
  });

  test('tools: tool_use streamed with input_json_delta; the tool result round-trips', async () => {
    const client = viaHeaders();
    const first = await client.messages.stream({ model: MODEL, max_tokens: 256, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Weather in Paris?' }] }).finalMessage();
    assert.equal(first.stop_reason, 'tool_use');
    const call = first.content.find((block) => block.type === 'tool_use');
    assert.ok(call !== undefined && call.type === 'tool_use');
    assert.deepEqual(call.input, { city: 'Paris' });
    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 256,
      tools: [WEATHER_TOOL],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 C' }] },
      ],
    });
    assert.deepEqual(second.content, [{ type: 'text', text: 'The tool said: Sunny, 21 C' }]);
  });

  test('count_tokens: native, answered in Anthropic shape', async () => {
    const counted = await viaHeaders().messages.countTokens({ model: MODEL, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hi please' }] });
    assert.deepEqual(counted, { input_tokens: countMockTokens('Be brief. Say hi please') });
    assert.equal(anthropic.requests[0]?.path, '/v1/messages/count_tokens');
  });

  test('prompt caching: cache_control reaches Anthropic; cache read and write tokens come back and are accounted', async () => {
    const stable = 'A long and stable system prompt for caching.';
    const system = [{ type: 'text' as const, text: stable, cache_control: { type: 'ephemeral' as const } }];
    const params = { model: MODEL, max_tokens: 64, system, messages: [{ role: 'user' as const, content: 'Hi' }] };
    const client = sdk({ 'x-gateway-virtual-key': 'vk-claude' });
    const written = await client.messages.create(params);
    const cached = countMockTokens(stable);
    assert.equal(written.usage.cache_creation_input_tokens, cached);
    assert.equal(written.usage.cache_read_input_tokens, 0);
    const read = await client.messages.stream(params).finalMessage();
    assert.equal(read.usage.cache_read_input_tokens, cached);
    const record = await lastRecord();
    assert.equal(record.promptTokens, countMockTokens(`${stable} Hi`));
    assert.equal(record.cachedTokens, cached);
  });

  test('provider key as Authorization: Bearer works too (authToken)', async () => {
    const client = sdk({ ...toAnthropic, 'x-gateway-custom-host': anthropic.url }, { apiKey: null, authToken: KEY });
    const message = await client.messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(message.type, 'message');
    assert.equal(anthropic.requests[0]?.headers['x-api-key'], KEY);
  });

  test('saved config: retries apply (529 overloaded, then success)', async () => {
    anthropic.enqueue({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    const { response } = await sdk({ 'x-gateway-config': 'claude-retry' }).messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).withResponse();
    assert.equal(response.headers.get('x-gateway-retry-attempt-count'), '1');
    assert.equal(anthropic.requests.length, 2);
  });
});

describe('/v1/messages errors are Anthropic-shaped', () => {
  test('a provider key where the gateway key belongs → 401 authentication_error', async () => {
    const client = new Anthropic({ baseURL: harness.gateway.origin, apiKey: KEY, maxRetries: 0 });
    const error = await client.messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof Anthropic.AuthenticationError);
    assert.deepEqual((error as InstanceType<typeof Anthropic.AuthenticationError>).error, {
      type: 'error',
      error: { type: 'authentication_error', message: 'Invalid gateway API key.' },
    });
  });

  test('invalid body → 400 invalid_request_error naming the field; the provider is not called', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-claude' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Required' } });
    assert.equal(anthropic.requests.length, 0);
  });

  test('invalid JSON → 400 in Anthropic shape', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY },
      body: '{"model":',
    });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { type: string; error: { type: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
  });

  test("the provider's error passes through in its own shape and status (SDK raises RateLimitError)", async () => {
    anthropic.enqueue({ status: 429, body: { type: 'error', error: { type: 'rate_limit_error', message: `Slow down (key ${KEY})` } } });
    const error = await viaHeaders().messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof Anthropic.RateLimitError);
    const body = (error as InstanceType<typeof Anthropic.RateLimitError>).error as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'rate_limit_error');
    assert.ok(!body.error.message.includes(KEY), 'the provider key is redacted');
  });

  test('input guardrail denial → 446 in Anthropic shape with hook_results', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'deny-secret' },
      body: JSON.stringify({ model: MODEL, max_tokens: 16, system: 'about the top-secret plan', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(response.status, 446);
    const body = (await response.json()) as { type: string; error: { type: string }; hook_results: unknown };
    assert.equal(body.type, 'error');
    assert.ok(body.hook_results !== undefined);
    assert.equal(anthropic.requests.length, 0);
  });
});

describe('/v1/messages output guardrails', () => {
  const body = JSON.stringify({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
  const headers = { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'deny-claude-output' };

  test('plain: an answer the check denies → 446 in Anthropic shape', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, { method: 'POST', headers, body });
    assert.equal(response.status, 446);
    const answer = (await response.json()) as { type: string; error: { message: string }; hook_results: { after_request_hooks: Array<{ verdict: boolean }> } };
    assert.equal(answer.type, 'error');
    assert.equal(answer.hook_results.after_request_hooks[0]?.verdict, false);
  });

  test('stream: the stream is held, assembled from Anthropic events and checked; a denial sends none of it', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, { method: 'POST', headers, body: JSON.stringify({ ...JSON.parse(body), stream: true }) });
    assert.equal(response.status, 446);
    const text = await response.text();
    assert.doesNotMatch(text, /message_start/);
    assert.equal((JSON.parse(text) as { type: string }).type, 'error');
  });
});

describe('/v1/messages to an OpenAI-format provider (translated)', () => {
  test('plain: system, user turn and max_tokens translated; the answer comes back as a Message with usage', async () => {
    const message = await viaOpenAI().messages.create({ model: 'gpt-4o-mini', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hi please' }] });
    assert.equal(message.type, 'message');
    assert.equal(message.role, 'assistant');
    assert.deepEqual(message.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.output_tokens, countMockTokens(DEFAULT_REPLY_TEXT));
    const upstream = openai.requests[0];
    assert.equal(upstream?.path, '/v1/chat/completions');
    assert.equal(upstream?.headers['authorization'], `Bearer ${OPENAI_KEY}`);
    assert.deepEqual(upstream?.json, {
      model: 'gpt-4o-mini',
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hi please' },
      ],
    });
  });

  test('stream: messages.stream() over OpenAI chunks gives the same text, a stop reason and usage', async () => {
    const stream = viaOpenAI().messages.stream({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Say hi please' }] });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.output_tokens, countMockTokens(DEFAULT_REPLY_TEXT));
    assert.deepEqual([types[0], types.at(-2), types.at(-1)], ['message_start', 'message_delta', 'message_stop']);
    assert.deepEqual((openai.requests[0]?.json as { stream_options?: unknown }).stream_options, { include_usage: true });
  });

  test('tools: an OpenAI tool call streams back as tool_use with input_json_delta', async () => {
    const chunk = (delta: unknown, finish: string | null = null): string =>
      `data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const body =
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }) +
      chunk({}, 'tool_calls') +
      `data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 } })}\n\n` +
      'data: [DONE]\n\n';
    openai.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const final = await viaOpenAI()
      .messages.stream({ model: 'gpt-4o-mini', max_tokens: 100, tools: [WEATHER_TOOL], tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Weather?' }] })
      .finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    assert.deepEqual(final.content, [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }]);
    assert.deepEqual(final.usage, { input_tokens: 9, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    const sent = openai.requests[0]?.json as Record<string, unknown>;
    assert.deepEqual(sent['tools'], [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER_TOOL.input_schema } }]);
    assert.equal(sent['tool_choice'], 'required');
  });

  test('count_tokens on an OpenAI-format provider → 400 invalid_request_error naming the limitation', async () => {
    const error = await viaOpenAI().messages.countTokens({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof Anthropic.BadRequestError);
    assert.match(String((error as Error).message), /count_tokens/);
    assert.equal(openai.requests.length, 0);
  });

  test('output checks see the translated Message: a failed check → 246 with the Message and hook_results', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'oa-checked' },
      body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(response.status, 246);
    const body = (await response.json()) as { type: string; content: unknown; hook_results: { after_request_hooks: Array<{ verdict: boolean }> } };
    assert.equal(body.type, 'message');
    assert.deepEqual(body.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    assert.equal(body.hook_results.after_request_hooks[0]?.verdict, false);
  });

  test('fallback from Anthropic (native) to OpenAI (translated): each target gets its own format', async () => {
    anthropic.enqueue({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    const client = sdk({ 'x-gateway-config': 'claude-then-openai' });
    const { data, response } = await client.messages.create({ model: MODEL, max_tokens: 16, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] }).withResponse();
    assert.equal(data.type, 'message');
    assert.deepEqual(data.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    assert.equal(anthropic.requests[0]?.path, '/v1/messages');
    assert.deepEqual((openai.requests[0]?.json as { messages: unknown }).messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.equal((openai.requests[0]?.json as { model: string }).model, 'gpt-4o-mini');
  });

  test("an OpenAI provider's error comes back Anthropic-shaped with its status", async () => {
    openai.enqueue({ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } });
    const error = await viaOpenAI().messages.create({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof Anthropic.AuthenticationError);
    const body = (error as InstanceType<typeof Anthropic.AuthenticationError>).error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'authentication_error');
  });
});

describe('/v1/messages mid-stream failures end with an Anthropic error event', () => {
  // A native Anthropic upstream that sends message_start and one delta, then stalls, or
  // then sends one event over the gateway's 4 MiB cap.
  let mode: 'stall' | 'oversize' = 'stall';
  let upstream: http.Server;
  let upstreamUrl = '';
  before(async () => {
    upstream = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const message = { id: 'msg_stall', type: 'message', role: 'assistant', model: MODEL, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } };
      res.write(anthropicSseFrame({ type: 'message_start', message }));
      res.write(anthropicSseFrame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
      res.write(anthropicSseFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }));
      if (mode === 'oversize') res.write(`event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${'x'.repeat(5 * 1024 * 1024)}`);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  });
  after(async () => {
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  function stalling(headers: Record<string, string> = {}): Anthropic {
    return sdk({ ...toAnthropic, 'x-gateway-custom-host': upstreamUrl, ...headers });
  }

  async function streamError(client: Anthropic): Promise<{ error: unknown; text: string }> {
    const stream = client.messages.stream({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const error = await stream.finalMessage().catch((caught: unknown) => caught);
    return { error, text };
  }

  test('native: a stream stalled past request_timeout → event: error with timeout_error, which the SDK raises', async () => {
    mode = 'stall';
    const { error, text } = await streamError(stalling({ 'x-gateway-request-timeout': '300' }));
    assert.equal(text, 'Hel', 'what arrived before the stall was relayed');
    assert.ok(error instanceof Anthropic.APIError, `got ${String(error)}`);
    const apiError = error as InstanceType<typeof Anthropic.APIError>;
    assert.equal(apiError.type, 'timeout_error');
    assert.deepEqual(Object.keys(apiError.error as object), ['type', 'error']);
    // The bound is what is left of the 300 ms budget when the attempt starts.
    assert.match(String(apiError.apiMessage), /stalled for more than (29\d|300) ms/);
    const record = await lastRecord();
    assert.equal(record.errorCode, 'AIGW_ERR_REQUEST_TIMEOUT');
  });

  test('native: an event over the 4 MiB cap → event: error with api_error; nothing of it reaches the client', async () => {
    mode = 'oversize';
    const { error, text } = await streamError(stalling());
    assert.equal(text, 'Hel');
    assert.ok(error instanceof Anthropic.APIError, `got ${String(error)}`);
    assert.equal((error as InstanceType<typeof Anthropic.APIError>).type, 'api_error');
    assert.match(String((error as InstanceType<typeof Anthropic.APIError>).apiMessage), /larger than/);
  });

  test('translated: an OpenAI stream that stalls ends the Anthropic stream with the same error event', async () => {
    openai.enqueue({ stall: 'mid-stream' });
    const client = sdk({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': openai.url, 'x-gateway-request-timeout': '300' }, { apiKey: OPENAI_KEY });
    const raw = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Hi' }] }).asResponse();
    const body = await raw.text();
    assert.match(body, /^event: message_start\n/);
    assert.doesNotMatch(body, /^data: \{"error"/m, 'no OpenAI-shaped error event');
    const last = body.trim().split('\n\n').at(-1) ?? '';
    assert.match(last, /^event: error\ndata: /);
    const event = JSON.parse(last.slice(last.indexOf('data: ') + 6)) as { type: string; error: { type: string; message: string } };
    assert.equal(event.type, 'error');
    assert.equal(event.error.type, 'timeout_error');
    // The bound is what is left of the 300 ms budget when the attempt starts.
    assert.match(event.error.message, /^The stream from openai stalled for more than (29\d|300) ms \(request_timeout\)\.$/);
  });
});

describe('/v1/messages/<unknown>', () => {
  test('with a key → 404 not_found_error in Anthropic shape; without one → 401 first', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/messages/batches/msgbatch_1`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { type: 'error', error: { type: 'not_found_error', message: 'Unknown route: GET /v1/messages/batches/msgbatch_1' } });
    const posted = await fetch(`${harness.gateway.origin}/v1/messages/nope`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY },
      body: '{}',
    });
    assert.equal(posted.status, 404);
    assert.equal(((await posted.json()) as { error: { type: string } }).error.type, 'not_found_error');
    const anonymous = await fetch(`${harness.gateway.origin}/v1/messages/nope`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: { type: string } }).error.type, 'authentication_error');
  });
});

describe('/v1/chat/completions to Anthropic with output guardrails', () => {
  test('checks see the translated chat completion: a failed check → 246 with the OpenAI-shaped answer and hook_results', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'claude-checked' },
      body: JSON.stringify({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(response.status, 246);
    const body = (await response.json()) as {
      object: string;
      choices: Array<{ message: { role: string; content: string }; finish_reason: string }>;
      usage: { prompt_tokens: number };
      hook_results: { after_request_hooks: Array<{ id: string; verdict: boolean }> };
      type?: unknown;
    };
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.type, undefined, 'not the Anthropic Message');
    assert.equal(body.choices[0]?.message.content, ANTHROPIC_REPLY_TEXT);
    assert.equal(body.choices[0]?.finish_reason, 'stop');
    assert.equal(body.usage.prompt_tokens, countMockTokens('Hi'));
    assert.equal(body.hook_results.after_request_hooks[0]?.id, 'flag-claude');
    assert.equal(body.hook_results.after_request_hooks[0]?.verdict, false);
    assert.equal(anthropic.requests[0]?.path, '/v1/messages');
  });
});
