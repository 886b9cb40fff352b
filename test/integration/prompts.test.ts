// Prompts through the gateway: the render endpoint mounted in-process (standalone), and a
// config's prompt_id running the rendered prompt through the official openai SDK.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-m', customHost: mock.url }],
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
      configs: [{ id: 'welcome-config', config: { provider: '@mock', prompt_id: 'welcome' } }],
    }),
  });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function render(id: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}/prompts/${id}/render`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe('POST /v1/prompts/{id}/render', () => {
  test('variables in system and user messages; root hyperparameters override defaults', async () => {
    const { status, json } = await render('welcome', { variables: { tone: 'friendly', company: 'Acme', name: 'Ada' }, temperature: 0.9, stream: true });
    assert.equal(status, 200);
    assert.equal(json['success'], true);
    const data = json['data'] as Record<string, unknown>;
    assert.deepEqual(data['messages'], [
      { role: 'system', content: 'You are a friendly assistant for Acme.' },
      { role: 'user', content: 'Greet Ada.' },
    ]);
    assert.equal(data['model'], 'gpt-4o-mini');
    assert.equal(data['temperature'], 0.9);
    assert.equal(data['max_tokens'], 100);
    assert.equal(data['stream'], true);
  });

  test('a nested hyperparameters key is a 400; missing variables are listed; unknown id is 404; a key is required', async () => {
    const nested = await render('welcome', { variables: { tone: 'a', company: 'b', name: 'c' }, hyperparameters: { temperature: 1 } });
    assert.equal(nested.status, 400);
    assert.equal((nested.json['error'] as { param: string }).param, 'hyperparameters');
    const missing = await render('welcome', { variables: { tone: 'a' } });
    assert.equal(missing.status, 400);
    assert.match((missing.json['error'] as { message: string }).message, /company.*name|name.*company/);
    assert.equal((await render('nope', { variables: {} })).status, 404);
    const anonymous = await fetch(`${harness.gateway.url}/prompts/welcome/render`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(anonymous.status, 401);
  });
});

describe('prompt_id in a config', () => {
  const client = () => harness.client({ 'x-gateway-config': 'welcome-config' });

  test('the rendered prompt is the request; body fields override; body messages continue it', async () => {
    mock.reset();
    const body = {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'And tell a joke.' }],
      temperature: 0.5,
      variables: { tone: 'formal', company: 'Initech', name: 'Bob' },
    };
    const completion = await client().chat.completions.create(body as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    assert.equal(completion.object, 'chat.completion');
    const sent = mock.requests[0]?.json as Record<string, unknown>;
    assert.deepEqual(sent['messages'], [
      { role: 'system', content: 'You are a formal assistant for Initech.' },
      { role: 'user', content: 'Greet Bob.' },
      { role: 'user', content: 'And tell a joke.' },
    ]);
    assert.equal(sent['temperature'], 0.5);
    assert.equal(sent['max_tokens'], 100);
    assert.equal(sent['variables'], undefined, 'variables are not forwarded');
  });

  test('missing variables → 400 before any provider is called', async () => {
    mock.reset();
    const error = await client()
      .chat.completions.create({ model: 'm', messages: [], variables: { tone: 'x' } } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.match(error.message, /Missing variables/);
    assert.equal(mock.requests.length, 0);
  });
});
