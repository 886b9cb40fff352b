// Google Vertex AI (`vertex-ai`) end to end: the official openai SDK → the real gateway →
// a mock Vertex AI speaking Google's wire format, with a real OAuth token endpoint that
// verifies the gateway's signed JWT assertion.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import {
  countWords,
  createTestServiceAccount,
  DEFAULT_GEMINI_TEXT,
  DEFAULT_TOOL_ARGS,
  mockVector,
  startMockVertex,
  type MockVertex,
  type TestServiceAccount,
} from '../fixtures/mock-vertex.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';

const STATIC_TOKEN = 'ya29.static-test-token';
const PROJECT = 'test-project';
const REGION = 'us-central1';
const MODEL = 'gemini-2.0-flash';
// A 1×1 transparent PNG.
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

let mock: MockVertex;
let harness: Harness;
let account: TestServiceAccount;
let savedAccount: TestServiceAccount;

before(async () => {
  mock = await startMockVertex({ staticTokens: [STATIC_TOKEN], project: PROJECT, region: REGION, splitFrames: true });
  account = createTestServiceAccount(mock.tokenUri, 'gateway');
  savedAccount = createTestServiceAccount(mock.tokenUri, 'saved');
  mock.registerServiceAccount(account);
  mock.registerServiceAccount(savedAccount);
  harness = await startHarness({
    state: baseState({
      providers: [
        {
          slug: 'vertex',
          provider: 'vertex-ai',
          virtualKey: 'vk-vertex',
          customHost: mock.origin,
          options: { region: REGION, projectId: PROJECT, serviceAccountJson: savedAccount.json },
        },
      ],
    }),
  });
});

after(async () => {
  await harness.close();
  await mock.close();
});

beforeEach(() => mock.reset());

function configFor(serviceAccount: TestServiceAccount, extra: Record<string, unknown> = {}): Record<string, string> {
  const config = { provider: 'vertex-ai', cloudB_region: REGION, cloudB_service_account_json: serviceAccount.json, custom_host: mock.origin, ...extra };
  return { 'x-gateway-config': JSON.stringify(config) };
}

const viaConfig = (): OpenAI => harness.client(configFor(account));
const chat = (content: string) => ({ model: MODEL, messages: [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content }] });

describe('vertex-ai chat completions through the openai SDK', () => {
  test('plain: Gemini generateContent with a service-account token, usage mapped', async () => {
    const completion = await viaConfig().chat.completions.create(chat('Say hello'));
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices[0]?.message.content, DEFAULT_GEMINI_TEXT);
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    const prompt = countWords('Be brief.') + countWords('Say hello');
    const reply = countWords(DEFAULT_GEMINI_TEXT);
    assert.deepEqual(completion.usage, { prompt_tokens: prompt, completion_tokens: reply, total_tokens: prompt + reply });
    const sent = mock.requests[0];
    assert.equal(sent?.path, `/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/${MODEL}:generateContent`);
    assert.match(sent?.headers['authorization'] ?? '', /^Bearer ya29\.mock-/);
    assert.deepEqual(sent?.json?.['systemInstruction'], { parts: [{ text: 'Be brief.' }] });
    assert.deepEqual(sent?.json?.['contents'], [{ role: 'user', parts: [{ text: 'Say hello' }] }]);
  });

  test('streaming: the streamed text equals the plain text, with usage when asked', async () => {
    const client = viaConfig();
    const plain = await client.chat.completions.create(chat('Say hello'));
    const stream = await client.chat.completions.create({ ...chat('Say hello'), stream: true, stream_options: { include_usage: true } });
    let text = '';
    let chunks = 0;
    let finish: string | null | undefined;
    let usage: unknown;
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
    assert.match(mock.requests[1]?.path ?? '', /:streamGenerateContent\?alt=sse$/);
  });

  test('a tool-call round trip: functionCall out, functionResponse back', async () => {
    const client = viaConfig();
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false },
        },
      },
    ];
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), DEFAULT_TOOL_ARGS);
    const declaration = (mock.requests[0]?.json?.['tools'] as Array<{ functionDeclarations: Array<{ parameters: unknown }> }>)[0]?.functionDeclarations[0];
    assert.deepEqual(declaration?.parameters, { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] });

    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '{"temperature":21}' });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools });
    assert.equal(second.choices[0]?.message.content, 'Tool said: {"temperature":21}');
    const contents = mock.requests[1]?.json?.['contents'];
    assert.deepEqual(contents, [
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: DEFAULT_TOOL_ARGS } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temperature: 21 } } }] },
    ]);

    const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools, stream: true });
    const deltas: OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    for await (const chunk of stream) deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
    assert.equal(deltas[0]?.function?.name, 'get_weather');
    assert.deepEqual(JSON.parse(deltas.map((delta) => delta.function?.arguments ?? '').join('')), DEFAULT_TOOL_ARGS);
  });

  test('image input: a data URL becomes inlineData', async () => {
    const completion = await viaConfig().chat.completions.create({
      model: MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          ],
        },
      ],
    });
    assert.equal(completion.choices[0]?.message.content, `I see image/png, ${Buffer.from(PNG_BASE64, 'base64').length} bytes.`);
    const parts = (mock.requests[0]?.json?.['contents'] as Array<{ parts: unknown[] }>)[0]?.parts;
    assert.deepEqual(parts?.[1], { inlineData: { mimeType: 'image/png', data: PNG_BASE64 } });
  });

  test('Claude on Vertex: rawPredict and streamRawPredict with anthropic_version', async () => {
    const client = viaConfig();
    const request = { model: 'claude-sonnet-4@20250514', messages: [{ role: 'user' as const, content: 'Hi there' }] };
    const plain = await client.chat.completions.create(request);
    const text = plain.choices[0]?.message.content ?? '';
    assert.match(text, /You said: Hi there$/);
    assert.equal(plain.usage?.prompt_tokens, 2);
    const sent = mock.requests[0];
    assert.equal(sent?.path, `/v1/projects/${PROJECT}/locations/${REGION}/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict`);
    assert.equal(sent?.json?.['anthropic_version'], 'vertex-2023-10-16');
    assert.equal(sent?.json?.['model'], undefined);

    const stream = await client.chat.completions.create({ ...request, stream: true });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    assert.equal(streamed, text);
    assert.match(mock.requests[1]?.path ?? '', /:streamRawPredict$/);
  });
});

describe('vertex-ai embeddings', () => {
  test('the SDK default (base64) decodes to the upstream vectors; floats on request', async () => {
    const client = viaConfig();
    const input = ['first text', 'the second text'];
    const encoded = await client.embeddings.create({ model: 'text-embedding-005', input });
    assert.equal(encoded.data.length, 2);
    encoded.data.forEach((item, index) => {
      const expected = mockVector(input[index] ?? '', 8).map((value) => Math.fround(value));
      assert.deepEqual(item.embedding, expected);
    });
    assert.deepEqual(encoded.usage, { prompt_tokens: 5, total_tokens: 5 });
    assert.match(mock.requests[0]?.path ?? '', /models\/text-embedding-005:predict$/);
    assert.deepEqual(mock.requests[0]?.json, { instances: [{ content: 'first text' }, { content: 'the second text' }] });

    const floats = await client.embeddings.create({ model: 'text-embedding-005', input: 'x', encoding_format: 'float', dimensions: 4 });
    assert.deepEqual(floats.data[0]?.embedding, mockVector('x', 4));
  });
});

describe('vertex-ai credentials and selection', () => {
  test('via headers: x-gateway-provider, x-gateway-cloudB-* and a caller-supplied access token', async () => {
    const client = harness.client(
      {
        'x-gateway-provider': 'vertex-ai',
        'x-gateway-cloudb-project-id': PROJECT,
        'x-gateway-cloudb-region': REGION,
        'x-gateway-custom-host': mock.origin,
      },
      { apiKey: STATIC_TOKEN },
    );
    const completion = await client.chat.completions.create(chat('Hi'));
    assert.equal(completion.choices[0]?.message.content, DEFAULT_GEMINI_TEXT);
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${STATIC_TOKEN}`);
  });

  test('via a saved provider (virtual key) with options', async () => {
    const completion = await harness.client({ 'x-gateway-virtual-key': 'vk-vertex' }).chat.completions.create(chat('Hi'));
    assert.equal(completion.choices[0]?.message.content, DEFAULT_GEMINI_TEXT);
  });

  test('token caching: 100 concurrent requests of a new service account → 1 token fetch', async () => {
    const fresh = createTestServiceAccount(mock.tokenUri, 'fresh');
    mock.registerServiceAccount(fresh);
    const client = harness.client(configFor(fresh, { cloudB_project_id: PROJECT }));
    const before = mock.tokenFetches;
    const answers = await Promise.all(Array.from({ length: 100 }, () => client.chat.completions.create(chat('Hi'))));
    assert.equal(answers.length, 100);
    assert.ok(answers.every((answer) => answer.choices[0]?.message.content === DEFAULT_GEMINI_TEXT));
    assert.equal(mock.tokenFetches - before, 1);
    assert.equal(new Set(mock.requests.map((request) => request.headers['authorization'])).size, 1);
  });

  test('an assertion the token endpoint rejects (unknown account, wrong key) → 502, no key material in the answer or the log', async () => {
    const unknown = createTestServiceAccount(mock.tokenUri, 'unknown'); // never registered with the mock
    const rotated = createTestServiceAccount(mock.tokenUri, 'rotated');
    const other = createTestServiceAccount(mock.tokenUri, 'other');
    mock.registerServiceAccount({ ...rotated, publicKey: other.publicKey }); // the mock knows another key for this account
    const fetchesBefore = mock.tokenFetches;
    for (const serviceAccount of [unknown, rotated]) {
      const error = await harness.client(configFor(serviceAccount)).chat.completions.create(chat('Hi')).catch((caught: unknown) => caught);
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 502);
      assert.match(error.message, /invalid_grant/);
      assert.doesNotMatch(error.message, /PRIVATE KEY/);
    }
    assert.equal(mock.tokenFetches, fetchesBefore);
    assert.equal(mock.requests.length, 0, 'no model call without a token');
    assert.doesNotMatch(harness.logText(), /PRIVATE KEY|ya29\./);
  });

  test('missing region → 400 naming the header', async () => {
    const config = { provider: 'vertex-ai', cloudB_project_id: PROJECT, cloudB_service_account_json: account.json, custom_host: mock.origin };
    const error = await harness
      .client({ 'x-gateway-config': JSON.stringify(config) })
      .chat.completions.create(chat('Hi'))
      .catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { param?: string }).param, 'x-gateway-cloudb-region');
  });
});

describe('vertex-ai errors are normalised, status kept, provider named', () => {
  test('429 RESOURCE_EXHAUSTED', async () => {
    mock.enqueue({ status: 429, body: { error: { code: 429, message: 'Resource exhausted. Please try again later.', status: 'RESOURCE_EXHAUSTED' } } });
    const error = await viaConfig().chat.completions.create(chat('Hi')).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.RateLimitError);
    assert.deepEqual(error.error, {
      message: 'Resource exhausted. Please try again later.',
      type: 'rate_limit_error',
      param: null,
      code: 'RESOURCE_EXHAUSTED',
      provider: 'vertex-ai',
    });
  });

  test('401 UNAUTHENTICATED for a bad access token', async () => {
    const client = harness.client(
      { 'x-gateway-provider': 'vertex-ai', 'x-gateway-cloudb-project-id': PROJECT, 'x-gateway-cloudb-region': REGION, 'x-gateway-custom-host': mock.origin },
      { apiKey: 'ya29.not-a-valid-token' },
    );
    const error = await client.chat.completions.create(chat('Hi')).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal((error.error as { code?: string }).code, 'UNAUTHENTICATED');
    assert.equal((error.error as { provider?: string }).provider, 'vertex-ai');
  });

  test('404 NOT_FOUND for an unknown model; 400 for an endpoint Vertex does not have', async () => {
    const missing = await viaConfig().chat.completions.create({ ...chat('Hi'), model: 'nonexistent-model' }).catch((caught: unknown) => caught);
    assert.ok(missing instanceof OpenAI.NotFoundError);
    assert.equal((missing.error as { code?: string }).code, 'NOT_FOUND');
    const unsupported = await viaConfig().completions.create({ model: MODEL, prompt: 'x' }).catch((caught: unknown) => caught);
    assert.ok(unsupported instanceof OpenAI.BadRequestError);
    assert.match(unsupported.message, /vertex-ai/);
  });
});
