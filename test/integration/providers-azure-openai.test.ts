// Azure OpenAI (cloudA) end to end: the official openai SDK → the real gateway → a mock
// Azure resource that checks api-version, api-key and deployments like Azure does.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { AZURE_REPLY_TEXT, startMockAzureOpenAI, type MockAzureOpenAI } from '../fixtures/mock-azure-openai.ts';
import { countMockTokens } from '../fixtures/mock-openai-payloads.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';

const KEY = '0123456789abcdef0123456789abcdef';
const ENTRA = 'eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJhdWQiOiJjb2duaXRpdmVzZXJ2aWNlcyJ9.c2lnbmF0dXJl';
const VERSION = '2024-10-21';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const WEATHER_TOOL: ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

let mock: MockAzureOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockAzureOpenAI({
    apiKey: KEY,
    entraToken: ENTRA,
    toolInput: { city: 'Paris' },
    deployments: {
      'gpt-4o-prod': { model: 'gpt-4o-2024-08-06', kind: 'chat' },
      'gpt-4o-mini-dev': { model: 'gpt-4o-mini-2024-07-18', kind: 'chat' },
      embed: { model: 'text-embedding-3-small', kind: 'embeddings' },
      instruct: { model: 'gpt-35-turbo-instruct', kind: 'completions' },
    },
  });
  harness = await startHarness({
    state: baseState({
      providers: [
        {
          slug: 'azure-eu',
          provider: 'azure-openai',
          virtualKey: 'vk-azure',
          apiKey: KEY,
          customHost: mock.origin,
          options: {
            resourceName: 'contoso-eu',
            deployments: [
              { deploymentId: 'gpt-4o-prod', alias: 'gpt-4o', apiVersion: VERSION, isDefault: true },
              { deploymentId: 'embed', alias: 'text-embedding-3-small', apiVersion: VERSION },
            ],
          },
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

/** Way 3: config keys, custom_host pointing at the mock in place of {resource}.openai.azure.com. */
function viaConfig(extra: Record<string, unknown> = {}): OpenAI {
  const config = { provider: 'azure-openai', api_key: KEY, custom_host: mock.origin, resource_name: 'contoso-eu', deployment_id: 'gpt-4o-prod', api_version: VERSION, ...extra };
  return harness.client({ 'x-gateway-config': JSON.stringify(config) });
}

/** Ways 1 + 4 with the x-gateway-cloudA-* headers. */
function viaHeaders(headers: Record<string, string> = {}, apiKey = KEY): OpenAI {
  return harness.client(
    {
      'x-gateway-provider': 'azure-openai',
      'x-gateway-custom-host': mock.origin,
      'x-gateway-cloudA-resource-name': 'contoso-eu',
      'x-gateway-cloudA-deployment-id': 'gpt-4o-prod',
      'x-gateway-cloudA-api-version': VERSION,
      'x-gateway-cloudA-model-name': 'gpt-4o',
      ...headers,
    },
    { apiKey },
  );
}

const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Say hi please' }];

describe('azure-openai through the openai SDK', () => {
  test('chat, plain: deployment URL with api-version, api-key auth, usage, rate-limit headers', async () => {
    const { data, response } = await viaConfig().chat.completions.create({ model: 'gpt-4o', messages }).withResponse();
    assert.equal(data.choices[0]?.message.content, AZURE_REPLY_TEXT);
    assert.equal(data.model, 'gpt-4o-2024-08-06');
    const prompt = countMockTokens('Say hi please');
    const completion = countMockTokens(AZURE_REPLY_TEXT);
    assert.deepEqual(data.usage, { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
    assert.equal(response.headers.get('x-gateway-provider'), 'azure-openai');
    assert.equal(response.headers.get('x-ratelimit-remaining-requests'), '119');
    assert.match(response.headers.get('apim-request-id') ?? '', /^apim-mock-\d+$/);
    const upstream = mock.requests[0];
    assert.equal(upstream?.path, `/openai/deployments/gpt-4o-prod/chat/completions?api-version=${VERSION}`);
    assert.equal(upstream?.headers['api-key'], KEY);
    assert.equal(upstream?.headers['authorization'], undefined);
  });

  test('chat, streaming (cloudA headers): the streamed text equals the plain text; usage matches', async () => {
    const plain = await viaHeaders().chat.completions.create({ model: 'gpt-4o', messages });
    const stream = await viaHeaders().chat.completions.create({ model: 'gpt-4o', messages, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, plain.choices[0]?.message.content);
    assert.deepEqual(usage, plain.usage);
    assert.equal(mock.requests[1]?.path, `/openai/deployments/gpt-4o-prod/chat/completions?api-version=${VERSION}`);
  });

  test('tool-call round trip', async () => {
    const client = viaHeaders();
    const question: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({ model: 'gpt-4o', messages: question, tools: [WEATHER_TOOL] });
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });

    const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: question, tools: [WEATHER_TOOL], stream: true });
    let args = '';
    for await (const chunk of stream) for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) args += delta.function?.arguments ?? '';
    assert.deepEqual(JSON.parse(args), { city: 'Paris' });

    const final = await client.chat.completions.create({
      model: 'gpt-4o',
      tools: [WEATHER_TOOL],
      messages: [...question, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '18°C and sunny' }],
    });
    assert.equal(final.choices[0]?.message.content, 'The tool said: 18°C and sunny');
  });

  test('image input (data: URL) is passed through byte for byte', async () => {
    const image = { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${PNG}` } };
    const completion = await viaConfig().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] }] });
    assert.equal(completion.choices[0]?.message.content, AZURE_REPLY_TEXT);
    const sent = (mock.requests[0]?.json as { messages: Array<{ content: unknown[] }> }).messages[0]?.content;
    assert.deepEqual(sent?.[1], image);
  });

  test('embeddings and completions on their own deployments', async () => {
    const embeddings = await viaHeaders({ 'x-gateway-cloudA-deployment-id': 'embed' }).embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    assert.equal(embeddings.data.length, 2);
    assert.equal(embeddings.data[0]?.embedding.length, 8);
    assert.equal(mock.requests[0]?.path, `/openai/deployments/embed/embeddings?api-version=${VERSION}`);
    const text = await viaHeaders({ 'x-gateway-cloudA-deployment-id': 'instruct' }).completions.create({ model: 'gpt-35-turbo-instruct', prompt: 'Say hi' });
    assert.equal(text.choices[0]?.text, AZURE_REPLY_TEXT);
  });

  test('deployments list: the model picks the deployment by alias, else the default', async () => {
    const deployments = [
      { deployment_id: 'gpt-4o-mini-dev', alias: 'mini', api_version: '2024-06-01' },
      { deployment_id: 'gpt-4o-prod', alias: 'big', api_version: VERSION, is_default: true },
    ];
    const client = viaConfig({ deployment_id: undefined, api_version: undefined, deployments });
    const mini = await client.chat.completions.create({ model: 'mini', messages });
    assert.equal(mini.model, 'gpt-4o-mini-2024-07-18');
    assert.equal(mock.requests[0]?.path, '/openai/deployments/gpt-4o-mini-dev/chat/completions?api-version=2024-06-01');
    const other = await client.chat.completions.create({ model: 'anything-else', messages });
    assert.equal(other.model, 'gpt-4o-2024-08-06');
  });

  test('a saved provider by virtual key: options resolve deployments by alias', async () => {
    const client = harness.client({ 'x-gateway-virtual-key': 'vk-azure' });
    const chat = await client.chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(chat.choices[0]?.message.content, AZURE_REPLY_TEXT);
    const vectors = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'a' });
    assert.equal(vectors.data.length, 1);
    assert.equal(mock.requests[1]?.path, `/openai/deployments/embed/embeddings?api-version=${VERSION}`);
  });

  test('an Entra ID token goes as Authorization: Bearer', async () => {
    const completion = await viaHeaders({}, ENTRA).chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(completion.choices[0]?.message.content, AZURE_REPLY_TEXT);
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${ENTRA}`);
    assert.equal(mock.requests[0]?.headers['api-key'], undefined);
  });

  test('responses go to the v1 API with the deployment as model', async () => {
    const response = await viaHeaders().responses.create({ model: 'gpt-4o', input: 'hello' });
    assert.equal(response.output_text, AZURE_REPLY_TEXT);
    assert.equal(mock.requests[0]?.path, '/openai/v1/responses');
    assert.equal((mock.requests[0]?.json as { model?: string }).model, 'gpt-4o-prod');
  });

  test('Azure AI inference: serverless chat and embeddings, managed /score', async () => {
    const serverless = { custom_host: mock.origin, cloudA_endpoint_name: 'llama', cloudA_region: 'eastus', cloudA_deployment_type: 'serverless' };
    const client = viaConfig({ ...serverless, resource_name: undefined, deployment_id: undefined, api_version: undefined });
    const chat = await client.chat.completions.create({ model: 'Llama-3-70B', messages });
    assert.equal(chat.choices[0]?.message.content, AZURE_REPLY_TEXT);
    assert.equal(mock.requests[0]?.path, '/chat/completions');
    assert.equal(mock.requests[0]?.headers['authorization'], `Bearer ${KEY}`);
    const vectors = await client.embeddings.create({ model: 'cohere-embed', input: 'a' });
    assert.equal(vectors.data.length, 1);

    const managed = viaConfig({ ...serverless, cloudA_deployment_type: 'managed', cloudA_deployment_name: 'blue', resource_name: undefined, deployment_id: undefined, api_version: undefined });
    const scored = await managed.chat.completions.create({ model: 'my-model', messages });
    assert.equal(scored.choices[0]?.message.content, AZURE_REPLY_TEXT);
    assert.equal(mock.requests[2]?.path, '/score');
    assert.equal(mock.requests[2]?.headers['azureml-model-deployment'], 'blue');

    const missing = await managed.embeddings.create({ model: 'x', input: 'a' }).catch((e: unknown) => e);
    assert.ok(missing instanceof OpenAI.BadRequestError);
    assert.match(missing.message, /azure-openai/);
    assert.match(missing.message, /\/v1\/embeddings/);
    assert.equal(mock.requests.length, 3);
  });
});

describe('azure-openai errors', () => {
  test('a wrong api-key: 401 with Azure code, message and the provider named', async () => {
    const error = await viaHeaders({}, 'ffffffffffffffffffffffffffffffff').chat.completions.create({ model: 'gpt-4o', messages }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    const body = error.error as { code?: string; message?: string; provider?: string };
    assert.equal(body.code, '401');
    assert.match(body.message ?? '', /^Access denied due to invalid subscription key/);
    assert.equal(body.provider, 'azure-openai');
  });

  test('an unknown deployment: 404 DeploymentNotFound', async () => {
    const error = await viaHeaders({ 'x-gateway-cloudA-deployment-id': 'nope' }).chat.completions.create({ model: 'gpt-4o', messages }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.NotFoundError);
    assert.equal((error.error as { code?: string }).code, 'DeploymentNotFound');
  });

  test('an api-version Azure does not serve: 400 from Azure; none at all: 400 from the gateway', async () => {
    const unsupported = await viaHeaders({ 'x-gateway-cloudA-api-version': '2019-01-01' }).chat.completions.create({ model: 'gpt-4o', messages }).catch((e: unknown) => e);
    assert.ok(unsupported instanceof OpenAI.BadRequestError);
    assert.equal((unsupported.error as { message?: string }).message, 'API version not supported');
    assert.equal(mock.requests.length, 1);

    const missing = await viaConfig({ api_version: undefined }).chat.completions.create({ model: 'gpt-4o', messages }).catch((e: unknown) => e);
    assert.ok(missing instanceof OpenAI.BadRequestError);
    assert.equal((missing.error as { param?: string }).param, 'x-gateway-clouda-api-version');
    assert.equal(mock.requests.length, 1, 'the gateway answered without calling Azure');
  });

  test('429 keeps its status and passes retry-after and rate-limit headers', async () => {
    mock.enqueue({
      status: 429,
      headers: { 'retry-after': '6', 'x-ratelimit-remaining-requests': '0' },
      body: { error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation have exceeded call rate limit.' } },
    });
    const error = await viaHeaders().chat.completions.create({ model: 'gpt-4o', messages }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.RateLimitError);
    assert.equal(error.headers?.get('retry-after'), '6');
    assert.equal(error.headers?.get('x-ratelimit-remaining-requests'), '0');
    assert.equal((error.error as { provider?: string }).provider, 'azure-openai');
  });
});

describe('the Azure mock rejects what Azure OpenAI rejects', () => {
  const chat = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
  const post = async (path: string, headers: Record<string, string> = { 'api-key': KEY }): Promise<{ status: number; error: { code?: string; message?: string } }> => {
    const response = await fetch(`${mock.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: chat });
    return { status: response.status, error: ((await response.json()) as { error: { code?: string; message?: string } }).error };
  };
  const chatPath = (deployment: string, version?: string): string =>
    `/openai/deployments/${deployment}/chat/completions${version === undefined ? '' : `?api-version=${version}`}`;

  test('api-version: missing → 404 Resource not found, unknown → 400', async () => {
    assert.deepEqual(await post(chatPath('gpt-4o-prod')), { status: 404, error: { code: '404', message: 'Resource not found' } });
    assert.deepEqual(await post(chatPath('gpt-4o-prod', '2019-01-01')), { status: 400, error: { code: 'BadRequest', message: 'API version not supported' } });
  });

  test('api-key: missing or wrong → 401 Access denied', async () => {
    const missing = await post(chatPath('gpt-4o-prod', VERSION), {});
    assert.equal(missing.status, 401);
    assert.match(missing.error.message ?? '', /^Access denied due to missing subscription key/);
    const wrong = await post(chatPath('gpt-4o-prod', VERSION), { 'api-key': 'nope' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.error.message ?? '', /^Access denied due to invalid subscription key/);
  });

  test('an unknown deployment → 404 DeploymentNotFound; chat on an embeddings deployment → 400 OperationNotSupported', async () => {
    const unknown = await post(chatPath('nope', VERSION));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.error.code, 'DeploymentNotFound');
    const wrongKind = await post(chatPath('embed', VERSION));
    assert.equal(wrongKind.status, 400);
    assert.equal(wrongKind.error.code, 'OperationNotSupported');
  });
});
