// The TypeScript SDK against a real gateway (in-process, port 0) in front of the mock
// OpenAI upstream: chat, streaming, prompt render and rate-limit policies through the SDK,
// and the SDK's parameters (trace id, metadata, config, provider token) reaching the gateway.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { Gateway, type GatewayOptions } from '../../sdk/js/src/index.ts';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const ADMIN_KEY = 'gw-sdk-admin-key-0001-0123456789';
const INFERENCE_KEY = 'gw-sdk-inference-key-01-01234567';
const MESSAGES: ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI({ apiKey: 'sk-saved' });
  harness = await startHarness({
    state: baseState({
      apiKeys: [
        { id: 'sdk-admin', key: ADMIN_KEY, scopes: ['inference', 'admin'] },
        { id: 'sdk-inference', key: INFERENCE_KEY, scopes: ['inference'] },
      ],
      providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-saved', customHost: mock.url }],
      prompts: [
        {
          id: 'welcome',
          model: 'gpt-4o-mini',
          messages: [
            { role: 'system', content: 'You are a {{tone}} assistant for {{company}}.' },
            { role: 'user', content: 'Greet {{name}}.' },
          ],
          parameters: { temperature: 0.2, max_tokens: 100 },
        },
      ],
    }),
  });
});
after(async () => {
  await harness.close();
  await mock.close();
});

function gateway(options: GatewayOptions = {}): Gateway {
  return new Gateway({ baseURL: harness.gateway.url, apiKey: ADMIN_KEY, provider: '@mock', maxRetries: 0, ...options });
}

async function logLine(traceId: string): Promise<Record<string, unknown>> {
  await eventually(() => harness.logs.some((line) => line['trace_id'] === traceId), `the log line of ${traceId}`, { timeoutMs: 10_000 });
  const line = harness.logs.find((entry) => entry['trace_id'] === traceId);
  assert.ok(line);
  return line;
}

describe('inference through the SDK', () => {
  test('chat: trace id and metadata reach the gateway (response header and request log)', async () => {
    const client = gateway({ traceId: 'sdk-chat-1', metadata: { _user: 'u-42', team: 'José' } });
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES }).withResponse();
    assert.equal(data.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
    assert.equal(response.headers.get('x-gateway-trace-id'), 'sdk-chat-1');
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    const line = await logLine('sdk-chat-1');
    // The non-ASCII value travelled as a \u escape and reads back as written.
    assert.deepEqual(line['metadata'], { _user: 'u-42', team: 'José' });
    assert.equal(line['api_key_id'], 'sdk-admin');
    assert.equal(line['status'], 200);
    const upstream = mock.requests.at(-1);
    assert.equal(upstream?.headers['authorization'], 'Bearer sk-saved', 'the saved provider’s key, not a placeholder');
    assert.equal(upstream?.headers['x-gateway-api-key'], undefined);
  });

  test('streaming, with a per-request trace id', async () => {
    const client = gateway({ traceId: 'sdk-default-trace' });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: MESSAGES, stream: true }, client.requestOptions({ traceId: 'sdk-stream-1' }))
      .withResponse();
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, DEFAULT_REPLY_TEXT);
    assert.ok(chunks > 1, 'streamed in several chunks');
    assert.equal(response.headers.get('x-gateway-trace-id'), 'sdk-stream-1');
    await logLine('sdk-stream-1');
  });

  test('withOptions: a unit of work with its own trace id and metadata', async () => {
    const base = gateway({ traceId: 'sdk-base', metadata: { _user: 'base' } });
    const job = base.withOptions({ traceId: 'sdk-job-7', metadata: { _user: 'u-7', _environment: 'staging' } });
    await job.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES });
    assert.deepEqual((await logLine('sdk-job-7'))['metadata'], { _user: 'u-7', _environment: 'staging' });
    await base.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES });
    assert.deepEqual((await logLine('sdk-base'))['metadata'], { _user: 'base' });
  });

  test('an inline config object routes the request (override_params applied upstream)', async () => {
    const client = gateway({ provider: null, config: { provider: '@mock', override_params: { model: 'gpt-4o' } }, traceId: 'sdk-config' });
    const { response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES }).withResponse();
    assert.equal(response.headers.get('x-gateway-last-used-option-index'), 'config');
    assert.equal((mock.requests.at(-1)?.json as { model?: string }).model, 'gpt-4o');
  });

  test('provider + custom host + provider token: the token goes upstream as Authorization', async () => {
    const client = gateway({ provider: 'openai', customHost: mock.url, authorization: 'sk-saved' });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES });
    assert.equal(mock.requests.at(-1)?.headers['authorization'], 'Bearer sk-saved');
    const wrong = gateway({ provider: 'openai', customHost: mock.url, authorization: 'sk-wrong' });
    await assert.rejects(wrong.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES }), OpenAI.AuthenticationError);
  });

  test('an unknown gateway key is the openai SDK’s AuthenticationError', async () => {
    await assert.rejects(
      gateway({ apiKey: 'gw-not-a-key-000000-0123456789ab' }).chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES }),
      OpenAI.AuthenticationError,
    );
  });
});

describe('prompts through the SDK', () => {
  test('render, then run the rendered prompt as a chat completion', async () => {
    const client = gateway();
    const { success, data } = await client.prompts.render('welcome', {
      variables: { tone: 'friendly', company: 'Acme', name: 'Ada' },
      temperature: 0.9,
    });
    assert.equal(success, true);
    assert.deepEqual(data.messages, [
      { role: 'system', content: 'You are a friendly assistant for Acme.' },
      { role: 'user', content: 'Greet Ada.' },
    ]);
    assert.equal(data.model, 'gpt-4o-mini');
    assert.equal(data.temperature, 0.9);
    assert.equal(data.max_tokens, 100);

    await client.chat.completions.create({
      model: data.model ?? 'gpt-4o-mini',
      messages: data.messages as ChatCompletionMessageParam[],
      temperature: data.temperature ?? null,
      max_tokens: data.max_tokens ?? null,
    });
    const sent = mock.requests.at(-1)?.json as { messages?: unknown; temperature?: number };
    assert.deepEqual(sent.messages, data.messages);
    assert.equal(sent.temperature, 0.9);
  });

  test('render errors are the openai SDK’s error classes, with the gateway’s param', async () => {
    const client = gateway();
    await assert.rejects(client.prompts.render('welcome', { variables: { tone: 'a' } }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.equal(error.param, 'variables');
      assert.match(error.message, /company/);
      return true;
    });
    await assert.rejects(client.prompts.render('nope', { variables: {} }), OpenAI.NotFoundError);
  });
});

describe('rate-limit policies through the SDK', () => {
  test('create, list, enforce (429 for the metadata it names), archive', async () => {
    const client = gateway();
    const created = await client.policies.rateLimits.create({
      name: 'sdk one per minute',
      conditions: [{ key: 'metadata._user', value: 'sdk-limited' }],
      group_by: [{ key: 'metadata._user' }],
      type: 'requests',
      unit: 'rpm',
      value: 1,
    });
    assert.match(created.id, /^[0-9a-f-]{36}$/);
    assert.equal(created.object, 'rate_limit_policy');

    const listed = await client.policies.rateLimits.list({ type: 'requests' });
    const policy = listed.data.find((p) => p.id === created.id);
    assert.equal(policy?.status, 'active');
    assert.equal(policy?.workspace_id, 'default');

    // The policy applies to the metadata sent by the SDK, and only to it.
    const limited = client.withOptions({ metadata: { _user: 'sdk-limited' } });
    await limited.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES });
    await assert.rejects(limited.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES }), OpenAI.RateLimitError);
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES }, client.requestOptions({ metadata: { _user: 'other' } }));

    const archived = await client.policies.rateLimits.archive(created.id);
    assert.equal(archived.status, 'archived');
    assert.equal((await client.policies.rateLimits.retrieve(created.id)).status, 'archived');
    assert.ok((await client.policies.rateLimits.list({ status: 'archived' })).data.some((p) => p.id === created.id));
    await limited.chat.completions.create({ model: 'gpt-4o-mini', messages: MESSAGES });
  });

  test('creating a policy needs the admin scope (PermissionDeniedError); invalid bodies are a 400 naming the field', async () => {
    const body = { conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 1 } as const;
    await assert.rejects(gateway({ apiKey: INFERENCE_KEY }).policies.rateLimits.create(body), OpenAI.PermissionDeniedError);
    await assert.rejects(gateway().policies.rateLimits.create({ ...body, conditions: [] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.equal(error.param, 'conditions');
      return true;
    });
  });
});
