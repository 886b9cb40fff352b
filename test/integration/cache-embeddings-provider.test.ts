// The semantic cache's embeddings provider is called through its own adapter: an Azure
// OpenAI resource gets its deployment URL, api-version and api-key; Vertex AI gets a
// :predict call with a service-account token — never the OpenAI form at their hosts. The
// mocks' vectors are hashes of the text, so a paraphrase is answered (in the provider's
// own format) with the first question's vector: a SEMANTIC_HIT then proves the answer was
// read in that format.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startMockAzureOpenAI, type MockAzureOpenAI } from '../fixtures/mock-azure-openai.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { embeddingsResponse } from '../fixtures/mock-openai-payloads.ts';
import { createTestServiceAccount, mockVector, startMockVertex, type MockVertex } from '../fixtures/mock-vertex.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const AZURE_KEY = '0123456789abcdef0123456789abcdef';
const AZURE_VERSION = '2024-10-21';
const PROJECT = 'test-project';
const REGION = 'us-central1';
const QUESTION = 'What is the capital of France?';
const PARAPHRASE = 'Which city is the capital of France?';
/** The mocks' vector size. */
const DIMENSIONS = 8;

let chat: MockOpenAI;

before(async () => {
  chat = await startMockOpenAI();
});
after(async () => {
  await chat.close();
});
beforeEach(() => chat.reset());

function stateWith(embeddingsProvider: Record<string, unknown>, model: string): Record<string, unknown> {
  return baseState({
    providers: [{ slug: 'chat', provider: 'openai', virtualKey: 'vk-chat', apiKey: 'sk-chat', customHost: chat.url }, embeddingsProvider],
    configs: [{ id: 'semantic', config: { provider: '@chat', cache: { mode: 'semantic' } } }],
    cache: { semanticThreshold: 0.8, embeddings: { provider: `@${String(embeddingsProvider['slug'])}`, model } },
  });
}

async function ask(harness: Harness, content: string) {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'semantic' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
  await response.text();
  return { status: response.status, cache: response.headers.get('x-gateway-cache-status') };
}

describe('cache.embeddings on Azure OpenAI', () => {
  let azure: MockAzureOpenAI;
  let harness: Harness;

  before(async () => {
    azure = await startMockAzureOpenAI({ apiKey: AZURE_KEY, deployments: { embed: { model: 'text-embedding-3-small', kind: 'embeddings' } } });
    const provider = {
      slug: 'azure-embed',
      provider: 'azure-openai',
      apiKey: AZURE_KEY,
      customHost: azure.origin,
      options: { deployments: [{ deploymentId: 'embed', alias: 'text-embedding-3-small', apiVersion: AZURE_VERSION }] },
    };
    harness = await startHarness({ state: stateWith(provider, 'text-embedding-3-small') });
  });
  after(async () => {
    await harness.close();
    await azure.close();
  });

  test('the deployment URL with api-version and the api-key header; the answer serves a SEMANTIC_HIT', async () => {
    assert.deepEqual(await ask(harness, QUESTION), { status: 200, cache: 'MISS' });
    azure.enqueue({ status: 200, body: embeddingsResponse([QUESTION], 'text-embedding-3-small', DIMENSIONS, false) });
    assert.deepEqual(await ask(harness, PARAPHRASE), { status: 200, cache: 'SEMANTIC_HIT' });
    assert.equal(chat.requests.length, 1);
    assert.deepEqual(
      azure.requests.map((request) => (request.json as Record<string, unknown>)['input']),
      [QUESTION, PARAPHRASE],
    );
    for (const request of azure.requests) {
      assert.equal(request.method, 'POST');
      assert.equal(request.path, `/openai/deployments/embed/embeddings?api-version=${AZURE_VERSION}`);
      assert.equal(request.headers['api-key'], AZURE_KEY);
      assert.equal(request.headers['authorization'], undefined);
      assert.equal((request.json as Record<string, unknown>)['model'], 'text-embedding-3-small');
    }
  });
});

describe('cache.embeddings on Vertex AI', () => {
  let vertex: MockVertex;
  let harness: Harness;

  before(async () => {
    vertex = await startMockVertex({ project: PROJECT, region: REGION });
    const account = createTestServiceAccount(vertex.tokenUri, 'cache-embedder');
    vertex.registerServiceAccount(account);
    const provider = {
      slug: 'vertex-embed',
      provider: 'vertex-ai',
      customHost: vertex.origin,
      options: { region: REGION, projectId: PROJECT, serviceAccountJson: account.json },
    };
    harness = await startHarness({ state: stateWith(provider, 'text-embedding-005') });
  });
  after(async () => {
    await harness.close();
    await vertex.close();
  });

  test(':predict with instances and a service-account token; the translated answer serves a SEMANTIC_HIT', async () => {
    assert.deepEqual(await ask(harness, QUESTION), { status: 200, cache: 'MISS' });
    const predictions = [{ embeddings: { values: mockVector(QUESTION, DIMENSIONS), statistics: { token_count: 6, truncated: false } } }];
    vertex.enqueue({ status: 200, body: { predictions } });
    assert.deepEqual(await ask(harness, PARAPHRASE), { status: 200, cache: 'SEMANTIC_HIT' });
    assert.equal(chat.requests.length, 1);
    assert.equal(vertex.tokenFetches, 1, 'one token from the service account, reused');
    assert.deepEqual(
      vertex.requests.map((request) => request.json?.['instances']),
      [[{ content: QUESTION }], [{ content: PARAPHRASE }]],
    );
    for (const request of vertex.requests) {
      assert.equal(request.path, `/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/text-embedding-005:predict`);
      assert.match(request.headers['authorization'] ?? '', /^Bearer \S+$/);
    }
  });
});
