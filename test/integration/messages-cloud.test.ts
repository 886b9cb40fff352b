// /v1/messages to Claude on Bedrock (InvokeModel, SigV4, binary event stream unwrapped to
// Anthropic's SSE) and on Vertex AI (rawPredict, OAuth), natively; to Gemini and a
// non-Claude Bedrock model translated through chat. Official @anthropic-ai/sdk.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ANTHROPIC_REPLY_TEXT } from '../fixtures/mock-anthropic.ts';
import { DEFAULT_BEDROCK_TEXT, startMockBedrock, type MockBedrock } from '../fixtures/mock-bedrock.ts';
import { createTestServiceAccount, startMockVertex, type MockVertex } from '../fixtures/mock-vertex.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const REGION = 'eu-west-1';
const KEY = { id: 'AKIDBEDROCKTEST00001', secret: 'bedrock-test-secret/with+chars' };
const BEDROCK_CLAUDE = 'anthropic.claude-sonnet-4-6-v1:0';
const PROJECT = 'test-project';
const VERTEX_REGION = 'us-central1';
const WEATHER_TOOL = { name: 'get_weather', description: 'Weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } };

let bedrock: MockBedrock;
let vertex: MockVertex;
let harness: Harness;

before(async () => {
  bedrock = await startMockBedrock({ region: REGION, splitFrames: true, credentials: { [KEY.id]: { secretAccessKey: KEY.secret } } });
  vertex = await startMockVertex({ project: PROJECT, region: VERTEX_REGION, splitFrames: true });
  const account = createTestServiceAccount(vertex.tokenUri, 'saved');
  vertex.registerServiceAccount(account);
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'bedrock', provider: 'bedrock', virtualKey: 'vk-bedrock', customHost: bedrock.origin, options: { region: REGION, accessKeyId: KEY.id, secretAccessKey: KEY.secret } },
        { slug: 'vertex', provider: 'vertex-ai', virtualKey: 'vk-vertex', customHost: vertex.origin, options: { region: VERTEX_REGION, projectId: PROJECT, serviceAccountJson: account.json } },
      ],
    }),
  });
});

after(async () => {
  await harness.close();
  await bedrock.close();
  await vertex.close();
});

beforeEach(() => {
  bedrock.reset();
  vertex.reset();
});

function sdk(virtualKey: string): Anthropic {
  return new Anthropic({ baseURL: harness.gateway.origin, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': virtualKey } });
}

describe('Claude on Bedrock, native', () => {
  test('plain: InvokeModel gets the Messages body with bedrock-2023-05-31 and betas; the Message comes back', async () => {
    const system = [{ type: 'text' as const, text: 'Be brief.', cache_control: { type: 'ephemeral' as const } }];
    const message = await sdk('vk-bedrock').messages.create(
      { model: BEDROCK_CLAUDE, max_tokens: 64, system, messages: [{ role: 'user', content: 'Hi' }] },
      { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
    );
    assert.deepEqual(message.content, [{ type: 'text', text: ANTHROPIC_REPLY_TEXT }]);
    const upstream = bedrock.requests[0];
    assert.equal(upstream?.path, `/model/${encodeURIComponent(BEDROCK_CLAUDE)}/invoke`);
    assert.match(upstream?.headers['authorization'] ?? '', /^AWS4-HMAC-SHA256 Credential=AKIDBEDROCKTEST00001\//);
    assert.deepEqual(upstream?.json, {
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 64,
      system,
      messages: [{ role: 'user', content: 'Hi' }],
      anthropic_beta: ['context-1m-2025-08-07'],
    });
  });

  test('stream: the event stream is unwrapped into Anthropic events; tool_use arrives with input_json_delta', async () => {
    const stream = sdk('vk-bedrock').messages.stream({ model: BEDROCK_CLAUDE, max_tokens: 64, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Weather?' }] });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    assert.equal(final.content.at(-1)?.type, 'tool_use');
    assert.ok(types.includes('content_block_delta'));
    assert.deepEqual([types[0], types.at(-1)], ['message_start', 'message_stop']);
    assert.match(bedrock.requests[0]?.path ?? '', /\/invoke-with-response-stream$/);
  });

  test('count_tokens: Bedrock CountTokens, answered as { input_tokens }', async () => {
    const counted = await sdk('vk-bedrock').messages.countTokens({ model: BEDROCK_CLAUDE, messages: [{ role: 'user', content: 'Say hi please' }] });
    assert.equal(typeof counted.input_tokens, 'number');
    assert.ok(counted.input_tokens > 0);
    assert.match(bedrock.requests[0]?.path ?? '', /\/count-tokens$/);
  });

  test('a non-Claude Bedrock model is translated through Converse', async () => {
    const message = await sdk('vk-bedrock').messages.create({ model: 'meta.llama3-70b-instruct-v1:0', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    assert.deepEqual(message.content, [{ type: 'text', text: DEFAULT_BEDROCK_TEXT }]);
    assert.match(bedrock.requests[0]?.path ?? '', /\/converse$/);
  });
});

describe('Vertex AI', () => {
  test('Claude plain: rawPredict with vertex-2023-10-16, the model in the URL and betas as a header', async () => {
    const message = await sdk('vk-vertex').messages.create(
      { model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] },
      { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
    );
    assert.equal(message.type, 'message');
    const upstream = vertex.requests.find((request) => request.path.includes(':rawPredict'));
    assert.match(upstream?.path ?? '', /publishers\/anthropic\/models\/claude-sonnet-4-6:rawPredict$/);
    assert.equal(upstream?.headers['anthropic-beta'], 'context-1m-2025-08-07');
    assert.deepEqual(upstream?.json, { anthropic_version: 'vertex-2023-10-16', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
  });

  test('Claude stream: Anthropic events straight through', async () => {
    const stream = sdk('vk-vertex').messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    const final = await stream.finalMessage();
    assert.equal(final.role, 'assistant');
    assert.ok(final.content.length > 0);
    assert.ok(vertex.requests.some((request) => request.path.includes(':streamRawPredict')));
  });

  test('Claude count_tokens: count-tokens:rawPredict with the model in the body', async () => {
    const counted = await sdk('vk-vertex').messages.countTokens({ model: 'claude-sonnet-4-6', messages: [{ role: 'user', content: 'Say hi please' }] });
    assert.ok(counted.input_tokens > 0);
    const upstream = vertex.requests.find((request) => request.path.includes('count-tokens'));
    assert.equal((upstream?.json as { model?: unknown }).model, 'claude-sonnet-4-6');
  });

  test('Gemini is translated: generateContent, answer as a Message', async () => {
    const message = await sdk('vk-vertex').messages.create({ model: 'gemini-2.0-flash', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(message.type, 'message');
    assert.equal(message.content[0]?.type, 'text');
    assert.ok(vertex.requests.some((request) => request.path.includes(':generateContent')));
  });
});
