// The Messages ingress does its work once per request, end to end with the official
// @anthropic-ai/sdk through the real gateway: the body is translated to chat once (not once
// per attempt and again by the relay), and the usage recorded is the provider's, exactly,
// read in one place and written to the request once.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, mock, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { anthropicSseFrame, startMockAnthropic, type MockAnthropic } from '../../fixtures/mock-anthropic.ts';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../../fixtures/mock-openai.ts';
import { countMockTokens } from '../../fixtures/mock-openai-payloads.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../../helpers/gateway-harness.ts';
import { eventually } from '../../helpers/eventually.ts';
import { MessagesIngress } from '../../../proxy/ingress/anthropic-messages/messages-ingress.ts';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';

const KEY = 'sk-ant-api03-messages-once-key';
const OPENAI_KEY = 'sk-openai-messages-once-key';
const MODEL = 'claude-sonnet-4-6';

let anthropic: MockAnthropic;
let openai: MockOpenAI;
let harness: Harness;
const records: RequestRecord[] = [];
/** Every Messages ingress the relay used, to read its translation count. */
const ingresses: MessagesIngress[] = [];

before(async () => {
  anthropic = await startMockAnthropic({ apiKey: KEY });
  openai = await startMockOpenAI({ apiKey: OPENAI_KEY });
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: KEY, customHost: anthropic.url },
        { slug: 'oa', provider: 'openai', apiKey: OPENAI_KEY, customHost: openai.url },
      ],
      configs: [
        // override_params: every attempt sends a fresh merged body, the translation is still one.
        { id: 'oa-retry', config: { provider: '@oa', override_params: { model: 'gpt-4o-mini' }, retry: { attempts: 3, on_status_codes: [500] } } },
        {
          id: 'oa-then-oa',
          config: {
            strategy: { mode: 'fallback' },
            targets: [
              { provider: '@oa', override_params: { model: 'gpt-4o' } },
              { provider: '@oa', override_params: { model: 'gpt-4o-mini' } },
            ],
          },
        },
      ],
    }),
    requestSink: (record) => records.push(record),
  });
  const answerAdapter = MessagesIngress.prototype.answerAdapter;
  mock.method(MessagesIngress.prototype, 'answerAdapter', function (this: MessagesIngress, ...args: Parameters<MessagesIngress['answerAdapter']>) {
    ingresses.push(this);
    return answerAdapter.apply(this, args);
  });
});

after(async () => {
  mock.restoreAll();
  await harness.close();
  await anthropic.close();
  await openai.close();
});

beforeEach(() => {
  anthropic.reset();
  openai.reset();
  records.length = 0;
  ingresses.length = 0;
});

function sdk(headers: Record<string, string>): Anthropic {
  return new Anthropic({ baseURL: harness.gateway.origin, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers } });
}

async function lastRecord(): Promise<RequestRecord> {
  await eventually(() => records.length > 0, 'a request record', { timeoutMs: 10_000 });
  return records.at(-1) as RequestRecord;
}

const failure = { status: 500, body: { error: { message: 'try again', type: 'server_error', param: null, code: null } } };
const params = { model: MODEL, max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user' as const, content: 'Hi' }] };

describe('/v1/messages to an OpenAI-format provider: the body is translated once per request', () => {
  test('plain, after a retried attempt: one translation, two upstream calls', async () => {
    openai.enqueue(failure);
    const message = await sdk({ 'x-gateway-config': 'oa-retry' }).messages.create(params);
    assert.deepEqual(message.content, [{ type: 'text', text: DEFAULT_REPLY_TEXT }]);
    assert.equal(openai.requests.length, 2);
    assert.equal((openai.requests[1]?.json as { model?: unknown }).model, 'gpt-4o-mini');
    assert.equal(ingresses.length, 1);
    assert.equal(ingresses[0]?.translations, 1);
  });

  test('streamed, after a retried attempt: one translation', async () => {
    openai.enqueue(failure);
    const final = await sdk({ 'x-gateway-config': 'oa-retry' }).messages.stream(params).finalMessage();
    assert.equal(final.usage.output_tokens, countMockTokens(DEFAULT_REPLY_TEXT));
    assert.equal(openai.requests.length, 2);
    assert.equal(ingresses.length, 1);
    assert.equal(ingresses[0]?.translations, 1);
  });

  test('a fallback to a target with other override_params translates for it, once', async () => {
    openai.enqueue(failure);
    await sdk({ 'x-gateway-config': 'oa-then-oa' }).messages.create(params);
    assert.deepEqual(
      openai.requests.map((request) => (request.json as { model?: unknown }).model),
      ['gpt-4o', 'gpt-4o-mini'],
    );
    assert.equal(ingresses[0]?.translations, 2);
  });
});

describe('/v1/messages usage: read once, recorded as the provider reported it', () => {
  // Anthropic counts input apart from cache writes and reads; the record's prompt is all three.
  const usage = { input_tokens: 11, cache_creation_input_tokens: 7, cache_read_input_tokens: 5 };
  const claude = { 'x-gateway-provider': '@claude' };

  test('a stream from Anthropic (Anthropic SDK): prompt, cached and completion tokens exactly', async () => {
    const message = { id: 'msg_usage', type: 'message', role: 'assistant', model: `${MODEL}-20261001`, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } };
    const events = [
      { type: 'message_start', message },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' there' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ];
    anthropic.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: events.map(anthropicSseFrame).join('') });
    const final = await sdk(claude).messages.stream(params).finalMessage();
    assert.equal(final.usage.output_tokens, 9);
    const record = await lastRecord();
    assert.equal(record.promptTokens, 11 + 7 + 5);
    assert.equal(record.completionTokens, 9);
    assert.equal(record.totalTokens, 11 + 7 + 5 + 9);
    assert.equal(record.cachedTokens, 5);
    assert.equal(record.status, 200);
  });

  test('a large plain answer relayed as it arrives (over 1 MiB): the cache tokens are counted too', async () => {
    const text = 'x'.repeat(1_200_000);
    const answer = { id: 'msg_large', type: 'message', role: 'assistant', model: MODEL, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage: { ...usage, output_tokens: 300_000 } };
    anthropic.enqueue({ status: 200, body: answer });
    const message = await sdk(claude).messages.create(params);
    assert.equal(message.usage.output_tokens, 300_000);
    const record = await lastRecord();
    assert.equal(record.promptTokens, 11 + 7 + 5);
    assert.equal(record.completionTokens, 300_000);
    assert.equal(record.cachedTokens, 5);
  });

  test('a chat stream translated to Anthropic events: the OpenAI usage, once', async () => {
    const chunk = (body: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'chatcmpl-u', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', ...body })}\n\n`;
    openai.enqueue({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }] }) +
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
        chunk({ choices: [], usage: { prompt_tokens: 13, completion_tokens: 4, total_tokens: 17, prompt_tokens_details: { cached_tokens: 6 } } }) +
        'data: [DONE]\n\n',
    });
    const final = await sdk({ 'x-gateway-provider': '@oa' }).messages.stream(params).finalMessage();
    assert.deepEqual(final.usage, { input_tokens: 7, output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 6 });
    const record = await lastRecord();
    assert.equal(record.promptTokens, 13);
    assert.equal(record.completionTokens, 4);
    assert.equal(record.cachedTokens, 6);
  });
});
