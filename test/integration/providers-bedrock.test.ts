// AWS Bedrock (`bedrock`) end to end: the official openai SDK → the real gateway → a mock
// Bedrock runtime that verifies every SigV4 signature with its own implementation and
// streams ConverseStream answers in the binary event-stream framing.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { converseEvent, converseException } from '../fixtures/mock-bedrock-event-stream.ts';
import { countWords, DEFAULT_BEDROCK_TEXT, DEFAULT_TOOL_ARGS, mockVector, startMockBedrock, type MockBedrock } from '../fixtures/mock-bedrock.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';

const REGION = 'eu-west-1';
const KEY = { id: 'AKIDBEDROCKTEST00001', secret: 'bedrock-test-secret/with+chars' };
const TEMP = { id: 'ASIABEDROCKTEST00002', secret: 'temporary-secret-key', token: 'IQoJb3JpZ2luX2VjEXAMPLE//session+token==' };
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

let mock: MockBedrock;
let harness: Harness;

before(async () => {
  mock = await startMockBedrock({
    region: REGION,
    splitFrames: true,
    credentials: {
      [KEY.id]: { secretAccessKey: KEY.secret },
      [TEMP.id]: { secretAccessKey: TEMP.secret, sessionToken: TEMP.token },
    },
  });
  harness = await startHarness({
    state: baseState({
      providers: [
        {
          slug: 'bedrock',
          provider: 'bedrock',
          virtualKey: 'vk-bedrock',
          customHost: mock.origin,
          options: { region: REGION, accessKeyId: KEY.id, secretAccessKey: KEY.secret },
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

function viaConfig(extra: Record<string, unknown> = {}): OpenAI {
  const config = {
    provider: 'bedrock',
    cloudC_access_key_id: KEY.id,
    cloudC_secret_access_key: KEY.secret,
    cloudC_region: REGION,
    custom_host: mock.origin,
    ...extra,
  };
  return harness.client({ 'x-gateway-config': JSON.stringify(config) });
}

function viaHeaders(credentials: { id: string; secret: string; token?: string }): OpenAI {
  const headers: Record<string, string> = {
    'x-gateway-provider': 'bedrock',
    'x-gateway-cloudc-access-key-id': credentials.id,
    'x-gateway-cloudc-secret-access-key': credentials.secret,
    'x-gateway-cloudc-region': REGION,
    'x-gateway-custom-host': mock.origin,
  };
  if (credentials.token !== undefined) headers['x-gateway-cloudc-session-token'] = credentials.token;
  return harness.client(headers);
}

const chat = (content: string) => ({ model: MODEL, messages: [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content }] });

describe('bedrock chat completions through the openai SDK', () => {
  test('plain: Converse, SigV4-signed, usage mapped', async () => {
    const completion = await viaConfig().chat.completions.create(chat('Say hello'));
    assert.equal(completion.choices[0]?.message.content, DEFAULT_BEDROCK_TEXT);
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    const prompt = countWords('Be brief.') + countWords('Say hello');
    const reply = countWords(DEFAULT_BEDROCK_TEXT);
    assert.deepEqual(completion.usage, { prompt_tokens: prompt, completion_tokens: reply, total_tokens: prompt + reply });
    const sent = mock.requests[0];
    assert.equal(sent?.path, '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse');
    assert.equal(sent?.modelId, MODEL);
    assert.deepEqual(sent?.json?.['system'], [{ text: 'Be brief.' }]);
    assert.equal(sent?.headers['x-amz-security-token'], undefined);
    assert.equal(mock.rejectedSignatures, 0);
  });

  test('streaming: ConverseStream event-stream → chunks; streamed text equals plain text; usage when asked', async () => {
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
    assert.match(mock.requests[1]?.path ?? '', /\/converse-stream$/);
  });

  test('a tool-call round trip: toolUse out, toolResult back (plain and streamed)', async () => {
    const client = viaConfig();
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } },
    ];
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'auto' });
    const choice = first.choices[0];
    const call = choice?.message.tool_calls?.[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.ok(choice !== undefined && call !== undefined && call.type === 'function');
    assert.match(call.id, /^tooluse_/);
    assert.deepEqual(JSON.parse(call.function.arguments), DEFAULT_TOOL_ARGS);
    assert.deepEqual(mock.requests[0]?.json?.['toolConfig'], {
      tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object', properties: { location: { type: 'string' } } } } } }],
      toolChoice: { auto: {} },
    });

    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: '21 degrees' });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools });
    assert.equal(second.choices[0]?.message.content, 'Tool said: 21 degrees');
    assert.deepEqual((mock.requests[1]?.json?.['messages'] as unknown[]).slice(1), [
      { role: 'assistant', content: [{ toolUse: { toolUseId: call.id, name: 'get_weather', input: DEFAULT_TOOL_ARGS } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: call.id, content: [{ text: '21 degrees' }] } }] },
    ]);

    const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools, stream: true });
    const deltas: OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(deltas[0]?.function?.name, 'get_weather');
    assert.match(deltas[0]?.id ?? '', /^tooluse_/);
    assert.deepEqual(JSON.parse(deltas.map((delta) => delta.function?.arguments ?? '').join('')), DEFAULT_TOOL_ARGS);
    assert.equal(finish, 'tool_calls');
  });

  test('image input: a data URL becomes an image block with base64 bytes', async () => {
    const completion = await viaConfig().chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } }] }],
    });
    assert.equal(completion.choices[0]?.message.content, `I see png, ${Buffer.from(PNG_BASE64, 'base64').length} bytes.`);
    const blocks = (mock.requests[0]?.json?.['messages'] as Array<{ content: unknown[] }>)[0]?.content;
    assert.deepEqual(blocks?.[1], { image: { format: 'png', source: { bytes: PNG_BASE64 } } });
  });
});

describe('bedrock embeddings via InvokeModel', () => {
  test('Titan: one text, dimensions, SDK base64 default decoded, usage from inputTextTokenCount', async () => {
    const result = await viaConfig().embeddings.create({ model: 'amazon.titan-embed-text-v2:0', input: 'hello embedding world', dimensions: 256 });
    assert.deepEqual(result.data[0]?.embedding, mockVector('hello embedding world', 256).map((value) => Math.fround(value)));
    assert.deepEqual(result.usage, { prompt_tokens: 3, total_tokens: 3 });
    assert.equal(mock.requests[0]?.path, '/model/amazon.titan-embed-text-v2%3A0/invoke');
    assert.deepEqual(mock.requests[0]?.json, { inputText: 'hello embedding world', dimensions: 256 });
  });

  test('Cohere: several texts with input_type; floats on request', async () => {
    const result = await viaConfig().embeddings.create({ model: 'cohere.embed-english-v3', input: ['a b', 'c'], encoding_format: 'float' });
    assert.equal(result.data.length, 2);
    assert.deepEqual(result.data[1]?.embedding, mockVector('c', 1024));
    assert.deepEqual(mock.requests[0]?.json, { texts: ['a b', 'c'], input_type: 'search_document' });
  });

  test('Titan with several inputs → 400 naming input, before any upstream call', async () => {
    const error = await viaConfig().embeddings.create({ model: 'amazon.titan-embed-text-v2:0', input: ['a', 'b'] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { param?: string }).param, 'input');
    assert.equal(mock.requests.length, 0);
  });
});

describe('bedrock credentials', () => {
  test('via headers without a session token', async () => {
    const completion = await viaHeaders(KEY).chat.completions.create(chat('Hi'));
    assert.equal(completion.choices[0]?.message.content, DEFAULT_BEDROCK_TEXT);
    assert.match(mock.requests[0]?.headers['authorization'] ?? '', new RegExp(`^AWS4-HMAC-SHA256 Credential=${KEY.id}/\\d{8}/${REGION}/bedrock/aws4_request`));
  });

  test('via headers with a session token (sent as x-amz-security-token and signed)', async () => {
    const completion = await viaHeaders(TEMP).chat.completions.create(chat('Hi'));
    assert.equal(completion.choices[0]?.message.content, DEFAULT_BEDROCK_TEXT);
    assert.equal(mock.requests[0]?.headers['x-amz-security-token'], TEMP.token);
    assert.match(mock.requests[0]?.headers['authorization'] ?? '', /SignedHeaders=[^,]*x-amz-security-token/);
  });

  test('via config with a session token, and via a saved provider', async () => {
    const withToken = viaConfig({ cloudC_access_key_id: TEMP.id, cloudC_secret_access_key: TEMP.secret, cloudC_session_token: TEMP.token });
    assert.equal((await withToken.chat.completions.create(chat('Hi'))).choices[0]?.message.content, DEFAULT_BEDROCK_TEXT);
    const saved = harness.client({ 'x-gateway-virtual-key': 'vk-bedrock' });
    assert.equal((await saved.chat.completions.create(chat('Hi'))).choices[0]?.message.content, DEFAULT_BEDROCK_TEXT);
  });

  test('a wrong secret → 403 signature mismatch; a missing session token → 403; normalised, provider named', async () => {
    const wrong = await viaHeaders({ id: KEY.id, secret: 'not-the-secret' }).chat.completions.create(chat('Hi')).catch((caught: unknown) => caught);
    assert.ok(wrong instanceof OpenAI.PermissionDeniedError);
    assert.match(wrong.message, /signature we calculated does not match/);
    assert.equal((wrong.error as { provider?: string }).provider, 'bedrock');
    const noToken = await viaHeaders({ id: TEMP.id, secret: TEMP.secret }).chat.completions.create(chat('Hi')).catch((caught: unknown) => caught);
    assert.ok(noToken instanceof OpenAI.PermissionDeniedError);
    assert.match(noToken.message, /security token included in the request is invalid/);
    assert.doesNotMatch(harness.logText(), new RegExp(`${KEY.secret.replace(/[+/]/g, '\\$&')}|${TEMP.secret}|session\\+token`));
  });

  test('no credentials → 400 naming the access key header', async () => {
    const error = await harness
      .client({ 'x-gateway-provider': 'bedrock', 'x-gateway-custom-host': mock.origin })
      .chat.completions.create(chat('Hi'))
      .catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { param?: string }).param, 'x-gateway-cloudc-access-key-id');
  });
});

describe('bedrock errors are normalised, status kept, provider named', () => {
  test('400 ValidationException and 429 ThrottlingException', async () => {
    const invalid = await viaConfig().chat.completions.create({ ...chat('Hi'), model: 'unknown.model-v1' }).catch((caught: unknown) => caught);
    assert.ok(invalid instanceof OpenAI.BadRequestError);
    assert.deepEqual(invalid.error, { message: 'The provided model identifier is invalid.', type: 'invalid_request_error', param: null, code: null, provider: 'bedrock' });

    mock.enqueue({ status: 429, body: { message: 'Too many requests, please wait before trying again.' }, headers: { 'x-amzn-errortype': 'ThrottlingException' } });
    const throttled = await viaConfig().chat.completions.create(chat('Hi')).catch((caught: unknown) => caught);
    assert.ok(throttled instanceof OpenAI.RateLimitError);
    assert.equal((throttled.error as { provider?: string }).provider, 'bedrock');
  });

  test('an exception event mid-stream becomes an error event the SDK raises', async () => {
    mock.enqueue({
      status: 200,
      body: undefined,
      frames: [
        converseEvent('messageStart', { role: 'assistant' }),
        converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Partial ' } }),
        converseException('throttlingException', 'Too many tokens, please wait before trying again.'),
      ],
    });
    const stream = await viaConfig().chat.completions.create({ ...chat('Hi'), stream: true });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((caught: unknown) => caught);
    assert.equal(text, 'Partial ');
    assert.ok(error instanceof OpenAI.APIError);
    assert.match(error.message, /Too many tokens/);
  });

  test('completions and responses are not Bedrock endpoints → 400 naming the provider', async () => {
    const error = await viaConfig().completions.create({ model: MODEL, prompt: 'x' }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.match(error.message, /bedrock/);
  });
});
