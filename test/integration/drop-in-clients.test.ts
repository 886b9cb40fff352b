// Any OpenAI- or Anthropic-compatible tool works with only a base URL and the gateway key
// (issue 26): the official SDKs, the Vercel AI SDK, LangChain's ChatOpenAI and the OpenAI
// Agents SDK, each configured the way its users configure it, list the gateway's models and
// use each one as `model` alone. The model catalog maps public names to saved providers and
// configs; keys and workspaces limit what they may select; errors come in the client's shape.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled } from '@openai/agents';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const OPENAI_KEY = 'sk-org-openai-key-0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-org-key-0123456789abcdefgh';
const LIMITED_KEY = 'gw-limited-key-0123456789-abcdefgh';
const TEAM_B_KEY = 'gw-team-b-key-0123456789-abcdefghi';
const DEFAULTED_KEY = 'gw-defaulted-key-0123456789-abcdef';

// The tracing exporter of the Agents SDK would send traces to api.openai.com.
setTracingDisabled(true);

let openaiMock: MockOpenAI;
let localMock: MockOpenAI;
let claudeMock: MockAnthropic;
let harness: Harness;
let baseURL: string;

before(async () => {
  openaiMock = await startMockOpenAI({ apiKey: OPENAI_KEY });
  localMock = await startMockOpenAI({ keyless: true });
  claudeMock = await startMockAnthropic({ apiKey: ANTHROPIC_KEY });
  const state = baseState({
    providers: [
      { slug: 'openai-prod', provider: 'openai', apiKey: OPENAI_KEY, customHost: openaiMock.url },
      { slug: 'claude', provider: 'anthropic', apiKey: ANTHROPIC_KEY, customHost: claudeMock.url },
      // A local model server (ollama, vLLM): no key, no provider account.
      { slug: 'local', provider: 'openai', customHost: localMock.url },
      { slug: 'team-b-openai', provider: 'openai', apiKey: OPENAI_KEY, customHost: openaiMock.url, workspaces: ['team-b'] },
    ],
    configs: [
      { id: 'prod', config: { provider: '@openai-prod', override_params: { model: 'gpt-4.1-mini' } } },
      { id: 'team-b-config', config: { provider: '@openai-prod' }, workspaces: ['team-b'] },
    ],
    models: [
      { name: 'gpt-4o', target: '@openai-prod' },
      { name: 'claude-sonnet-4-6', aliases: ['claude-sonnet-4-6-20260217'], target: '@claude' },
      { name: 'llama3.2', target: '@local' },
      { name: 'fast', config: 'prod' },
      { name: 'team-b-model', target: '@openai-prod', model: 'gpt-b', workspaces: ['team-b'] },
    ],
  });
  (state['apiKeys'] as unknown[]).push(
    { id: 'limited', key: LIMITED_KEY, models: ['gpt-4o', '@openai-prod/gpt-4o-mini'] },
    { id: 'team-b', key: TEAM_B_KEY, workspace: 'team-b' },
    { id: 'defaulted', key: DEFAULTED_KEY, workspace: 'defaulted' },
  );
  state['workspaces'] = [{ id: 'defaulted', defaultConfig: 'prod' }];
  harness = await startHarness({ state });
  baseURL = harness.gateway.url;
});

after(async () => {
  await harness?.close();
  await Promise.all([openaiMock?.close(), localMock?.close(), claudeMock?.close()]);
});

function openai(apiKey = TEST_GATEWAY_KEY): OpenAI {
  return new OpenAI({ baseURL, apiKey, maxRetries: 0 });
}

function lastModel(mock: { requests: Array<{ json: unknown }> }): unknown {
  return (mock.requests.at(-1)?.json as { model?: unknown } | undefined)?.model;
}

describe('the openai SDK with a base URL and the gateway key', () => {
  test('/v1/models lists what the key can select, and every listed id works as model alone', async () => {
    const ids: string[] = [];
    for await (const model of openai().models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['gpt-4o', 'claude-sonnet-4-6', 'llama3.2', 'fast', 'gpt-4.1-mini']);
    for (const id of ids) {
      const completion = await openai().chat.completions.create({ model: id, messages: [{ role: 'user', content: 'hi' }] });
      assert.ok((completion.choices[0]?.message.content ?? '').length > 0, id);
    }
    assert.equal((await openai().models.retrieve('llama3.2')).owned_by, 'openai');
  });

  test('names map to their upstream: a saved provider and model, a saved config, @slug/model', async () => {
    await openai().chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastModel(openaiMock), 'gpt-4.1-mini');
    await openai().chat.completions.create({ model: '@openai-prod/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastModel(openaiMock), 'gpt-4o-mini');
    assert.equal(openaiMock.requests.at(-1)?.headers['authorization'], `Bearer ${OPENAI_KEY}`);
  });

  test('a keyless local model gets no credential at all', async () => {
    localMock.reset();
    const completion = await openai().chat.completions.create({ model: 'llama3.2', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(completion.choices[0]?.message.content, DEFAULT_REPLY_TEXT);
    assert.equal(localMock.requests.length, 1);
    assert.equal(localMock.requests[0]?.headers['authorization'], undefined);
    assert.equal(lastModel(localMock), 'llama3.2');
  });

  test('streaming works the same way', async () => {
    const stream = await openai().chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, DEFAULT_REPLY_TEXT);
  });

  test('an unknown model: a 404 naming it, in OpenAI shape', async () => {
    const error = await openai().chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.NotFoundError, String(error));
    assert.equal(error.code, 'AIGW_ERR_UNKNOWN_MODEL');
    assert.equal(error.param, 'model');
    assert.match(error.message, /"gpt-9"/);
    const missing = await openai().models.retrieve('gpt-9').catch((caught: unknown) => caught);
    assert.ok(missing instanceof OpenAI.NotFoundError);
  });

  test('a wrong key: 401; no key: 401 saying where the key goes', async () => {
    const error = await openai('gw-wrong-key-0123456789-0123456789').models.list().catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal(error.code, 'AIGW_ERR_INVALID_API_KEY');
    const response = await fetch(`${baseURL}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [] }) });
    assert.equal(response.status, 401);
    const body = (await response.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'AIGW_ERR_MISSING_API_KEY');
    assert.match(body.error.message, /Authorization: Bearer/);
  });
});

describe('keys and workspaces limit what a key may select', () => {
  test('a key with an allow-list lists and uses only those; another model is a 403 naming it', async () => {
    const ids: string[] = [];
    for await (const model of openai(LIMITED_KEY).models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['gpt-4o', '@openai-prod/gpt-4o-mini']);
    for (const id of ids) await openai(LIMITED_KEY).chat.completions.create({ model: id, messages: [{ role: 'user', content: 'hi' }] });
    const error = await openai(LIMITED_KEY).chat.completions.create({ model: 'claude-sonnet-4-6', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.PermissionDeniedError, String(error));
    assert.equal(error.code, 'AIGW_ERR_MODEL_NOT_ALLOWED');
    assert.match(error.message, /"claude-sonnet-4-6"/);
    // Routing headers cannot step around the list.
    const viaHeader = await new OpenAI({ baseURL, apiKey: LIMITED_KEY, maxRetries: 0, defaultHeaders: { 'x-gateway-provider': '@claude' } })
      .chat.completions.create({ model: 'claude-sonnet-4-6', messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    assert.ok(viaHeader instanceof OpenAI.PermissionDeniedError);
  });

  test('models, configs and providers limited to a workspace are invisible to other workspaces', async () => {
    const ids: string[] = [];
    for await (const model of openai().models.list()) ids.push(model.id);
    assert.ok(!ids.includes('team-b-model'));
    const asModel = await openai().chat.completions.create({ model: 'team-b-model', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    assert.ok(asModel instanceof OpenAI.NotFoundError);
    const asSlug = await openai().chat.completions.create({ model: '@team-b-openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    assert.ok(asSlug instanceof OpenAI.NotFoundError);
    const byHeader = await harness.client({ 'x-gateway-provider': '@team-b-openai' }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    assert.ok(byHeader instanceof OpenAI.NotFoundError);
    const byConfig = await harness.client({ 'x-gateway-config': 'team-b-config' }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    assert.ok(byConfig instanceof OpenAI.NotFoundError);
    // Forwarded routes too.
    const forwarded = await harness.client({ 'x-gateway-provider': '@team-b-openai' }).moderations.create({ input: 'hi' }).catch((caught: unknown) => caught);
    assert.ok(forwarded instanceof OpenAI.NotFoundError, String(forwarded));

    const teamB: string[] = [];
    for await (const model of openai(TEAM_B_KEY).models.list()) teamB.push(model.id);
    assert.ok(teamB.includes('team-b-model'));
    await openai(TEAM_B_KEY).chat.completions.create({ model: 'team-b-model', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastModel(openaiMock), 'gpt-b');
    await openai(TEAM_B_KEY).chat.completions.create({ model: '@team-b-openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  });

  test("a workspace's default config serves a model the catalog lacks", async () => {
    await openai(DEFAULTED_KEY).chat.completions.create({ model: 'anything-at-all', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastModel(openaiMock), 'gpt-4.1-mini');
  });
});

describe('other OpenAI-compatible clients with only a base URL and the key', () => {
  test('the Vercel AI SDK: createOpenAI({ baseURL, apiKey })', async () => {
    const provider = createOpenAI({ baseURL, apiKey: TEST_GATEWAY_KEY });
    const chat = await generateText({ model: provider.chat('gpt-4o'), prompt: 'hi' });
    assert.equal(chat.text, DEFAULT_REPLY_TEXT);
    // The default model of the provider speaks the Responses API.
    const responses = await generateText({ model: provider('llama3.2'), prompt: 'hi' });
    assert.equal(responses.text, DEFAULT_REPLY_TEXT);
    assert.equal(lastModel(localMock), 'llama3.2');
  });

  test("LangChain's ChatOpenAI", async () => {
    const model = new ChatOpenAI({ model: 'fast', apiKey: TEST_GATEWAY_KEY, configuration: { baseURL }, maxRetries: 0 });
    const answer = await model.invoke('hi');
    assert.equal(answer.content, DEFAULT_REPLY_TEXT);
    assert.equal(lastModel(openaiMock), 'gpt-4.1-mini');
  });

  test('the OpenAI Agents SDK', async () => {
    const runner = new Runner({ modelProvider: new OpenAIProvider({ baseURL, apiKey: TEST_GATEWAY_KEY }) });
    const agent = new Agent({ name: 'assistant', instructions: 'Answer briefly.', model: 'gpt-4o' });
    const result = await runner.run(agent, 'hi');
    assert.equal(result.finalOutput, DEFAULT_REPLY_TEXT);
    const viaChat = new Runner({ modelProvider: new OpenAIProvider({ baseURL, apiKey: TEST_GATEWAY_KEY, useResponses: false }) });
    assert.equal((await viaChat.run(new Agent({ name: 'local', model: 'llama3.2' }), 'hi')).finalOutput, DEFAULT_REPLY_TEXT);
  });
});

describe('the Anthropic SDK (and Claude Code) with a base URL and the gateway key', () => {
  const ask = (client: Anthropic, model: string) => client.messages.create({ model, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });

  test('apiKey (x-api-key) and authToken (Authorization: Bearer) both work; Anthropic-format names map to the target', async () => {
    claudeMock.requests.length = 0;
    const viaApiKey = await ask(new Anthropic({ baseURL: harness.gateway.origin, apiKey: TEST_GATEWAY_KEY, maxRetries: 0 }), 'claude-sonnet-4-6-20260217');
    assert.equal(viaApiKey.type, 'message');
    const viaToken = await ask(new Anthropic({ baseURL: harness.gateway.origin, apiKey: null, authToken: TEST_GATEWAY_KEY, maxRetries: 0 }), 'claude-sonnet-4-6');
    assert.equal(viaToken.type, 'message');
    assert.equal(claudeMock.requests.length, 2);
    for (const request of claudeMock.requests) {
      assert.equal(request.headers['x-api-key'], ANTHROPIC_KEY);
      assert.equal((request.json as { model?: unknown }).model, 'claude-sonnet-4-6');
      assert.ok(!Object.values(request.headers).some((value) => value.includes(TEST_GATEWAY_KEY)));
    }
  });

  test("the Anthropic SDK lists the key's models in Anthropic's shape", async () => {
    const client = new Anthropic({ baseURL: harness.gateway.origin, apiKey: TEST_GATEWAY_KEY, maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      assert.equal(model.type, 'model');
      ids.push(model.id);
    }
    assert.deepEqual(ids, ['gpt-4o', 'claude-sonnet-4-6', 'llama3.2', 'fast', 'gpt-4.1-mini']);
    assert.equal((await client.models.retrieve('claude-sonnet-4-6')).id, 'claude-sonnet-4-6');
  });

  test('a Claude model name can map to any target: /v1/messages to an OpenAI-format model', async () => {
    const message = await ask(new Anthropic({ baseURL: harness.gateway.origin, apiKey: TEST_GATEWAY_KEY, maxRetries: 0 }), 'llama3.2');
    assert.equal(message.content[0]?.type, 'text');
    assert.equal(lastModel(localMock), 'llama3.2');
  });

  test('errors in Anthropic shape: unknown model, two different keys', async () => {
    const unknown = await ask(new Anthropic({ baseURL: harness.gateway.origin, apiKey: TEST_GATEWAY_KEY, maxRetries: 0 }), 'claude-opus-9').catch((caught: unknown) => caught);
    assert.ok(unknown instanceof Anthropic.NotFoundError, String(unknown));
    assert.equal((unknown.error as { type?: string }).type, 'error');
    assert.match(unknown.message, /claude-opus-9/);
    // Both of Anthropic's credential headers, holding different keys.
    const response = await fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': TEST_GATEWAY_KEY, authorization: 'Bearer sk-ant-something-else-0123456789' },
      body: JSON.stringify({ model: 'claude-sonnet-4-6', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 400);
    const ambiguous = (await response.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(ambiguous.type, 'error');
    assert.equal(ambiguous.error.type, 'invalid_request_error');
    assert.match(ambiguous.error.message, /different keys/);
  });
});
