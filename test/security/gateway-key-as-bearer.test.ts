// The gateway key as the bearer token (issue 26): tools that set only a base URL and an API
// key send the gateway key as `Authorization: Bearer` (or x-api-key for Anthropic's SDKs).
// It authenticates like x-gateway-api-key, is never sent upstream, and provider credentials
// then come from saved providers only. The spec's scheme (gateway key in x-gateway-api-key,
// provider key in Authorization) is unchanged. A client's own credential never reaches a
// saved provider that has no key, unless that provider opts in.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const SAVED_KEY = 'sk-saved-org-key-0123456789abcdefghij';
const CLIENT_KEY = 'sk-client-own-key-0123456789abcdefgh';
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
const MESSAGE = JSON.stringify({ model: 'claude-x', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });

let saved: MockOpenAI;
let local: MockOpenAI;
let own: MockOpenAI;
let claude: MockAnthropic;
let harness: Harness;

before(async () => {
  saved = await startMockOpenAI({ apiKey: SAVED_KEY });
  local = await startMockOpenAI({ keyless: true });
  own = await startMockOpenAI({ apiKey: CLIENT_KEY });
  claude = await startMockAnthropic({ apiKey: SAVED_KEY });
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'org', provider: 'openai', apiKey: SAVED_KEY, customHost: saved.url },
        { slug: 'local', provider: 'openai', customHost: local.url },
        { slug: 'local-open', provider: 'openai', customHost: local.url, forwardClientCredential: true },
        { slug: 'claude', provider: 'anthropic', apiKey: SAVED_KEY, customHost: claude.url },
      ],
      configs: [{ id: 'via-local', config: { provider: '@local' } }],
    }),
  });
});

after(async () => {
  await harness?.close();
  await Promise.all([saved?.close(), local?.close(), own?.close(), claude?.close()]);
});

interface Answer {
  status: number;
  body: Record<string, unknown> & { error?: { code?: string; param?: string | null; message?: string; type?: string } };
}

async function post(path: string, headers: Record<string, string>, body = CHAT): Promise<Answer> {
  const response = await fetch(`${harness.gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: response.status, body: (await response.json()) as never };
}

function everyHeaderValue(mock: { requests: Array<{ headers: Record<string, string> }> }): string[] {
  return mock.requests.flatMap((request) => Object.values(request.headers));
}

describe('the gateway key as the bearer token', () => {
  test('Authorization: Bearer <gateway key> authenticates; the saved key goes upstream, the gateway key never', async () => {
    saved.reset();
    const answer = await post('/chat/completions', { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-provider': '@org' });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(saved.requests[0]?.headers['authorization'], `Bearer ${SAVED_KEY}`);
    assert.ok(!everyHeaderValue(saved).some((value) => value.includes(TEST_GATEWAY_KEY)));
  });

  test('x-api-key: <gateway key> authenticates on /v1/messages; Anthropic gets the saved key', async () => {
    claude.reset();
    const answer = await post('/messages', { 'x-api-key': TEST_GATEWAY_KEY, 'anthropic-version': '2023-06-01', 'x-gateway-provider': '@claude' }, MESSAGE);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(claude.requests[0]?.headers['x-api-key'], SAVED_KEY);
    assert.ok(!everyHeaderValue(claude).some((value) => value.includes(TEST_GATEWAY_KEY)));
  });

  test("the spec's scheme is unchanged: x-gateway-api-key, and the provider key in Authorization", async () => {
    own.reset();
    const answer = await post('/chat/completions', {
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      authorization: `Bearer ${CLIENT_KEY}`,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': own.url,
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(own.requests[0]?.headers['authorization'], `Bearer ${CLIENT_KEY}`);
  });

  test('the gateway key repeated in Authorization next to x-gateway-api-key is not sent upstream', async () => {
    own.reset();
    const answer = await post('/chat/completions', {
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      authorization: `Bearer ${TEST_GATEWAY_KEY}`,
      'x-gateway-provider': 'openai',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error?.code, 'AIGW_ERR_MISSING_PROVIDER_KEY');
  });

  test('the gateway key as bearer is no provider key: a provider without a saved key is a 400, nothing is sent', async () => {
    own.reset();
    const answer = await post('/chat/completions', { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-provider': 'openai' });
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error?.code, 'AIGW_ERR_MISSING_PROVIDER_KEY');
  });

  test('a wrong key gets the same 401 in any header', async () => {
    const wrong = 'gw-wrong-key-0123456789-0123456789';
    const answers = await Promise.all([
      post('/chat/completions', { 'x-gateway-api-key': wrong, 'x-gateway-provider': '@org' }),
      post('/chat/completions', { authorization: `Bearer ${wrong}`, 'x-gateway-provider': '@org' }),
      post('/chat/completions', { 'x-api-key': wrong, 'x-gateway-provider': '@org' }),
      // A provider key sent without a gateway key is just a wrong gateway key.
      post('/chat/completions', { authorization: `Bearer ${CLIENT_KEY}`, 'x-gateway-provider': 'openai' }),
    ]);
    for (const answer of answers) {
      assert.equal(answer.status, 401);
      assert.equal(answer.body.error?.code, 'AIGW_ERR_INVALID_API_KEY');
      assert.equal(answer.body.error?.message, 'Invalid gateway API key.');
    }
  });

  test('no key at all: a 401 that says where the key goes', async () => {
    const answer = await post('/chat/completions', { 'x-gateway-provider': '@org' });
    assert.equal(answer.status, 401);
    assert.equal(answer.body.error?.code, 'AIGW_ERR_MISSING_API_KEY');
    assert.match(answer.body.error?.message ?? '', /Authorization: Bearer/);
  });

  test('two different keys in Authorization and x-api-key are ambiguous: a 400, in Anthropic shape on /v1/messages', async () => {
    const openai = await post('/chat/completions', { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-api-key': CLIENT_KEY, 'x-gateway-provider': '@org' });
    assert.equal(openai.status, 400);
    assert.equal(openai.body.error?.code, 'AIGW_ERR_AMBIGUOUS_CREDENTIAL');
    const anthropic = await post('/messages', { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-api-key': CLIENT_KEY, 'x-gateway-provider': '@claude' }, MESSAGE);
    assert.equal(anthropic.status, 400);
    assert.equal(anthropic.body['type'], 'error');
    assert.equal(anthropic.body.error?.type, 'invalid_request_error');
    assert.match(anthropic.body.error?.message ?? '', /different keys/);
  });
});

describe('no client credential to a host the client did not choose', () => {
  test('a keyless saved provider never receives the client Authorization (header, inline config, saved config)', async () => {
    local.reset();
    const viaHeader = await post('/chat/completions', { 'x-gateway-api-key': TEST_GATEWAY_KEY, authorization: `Bearer ${CLIENT_KEY}`, 'x-gateway-provider': '@local' });
    assert.equal(viaHeader.status, 200, JSON.stringify(viaHeader.body));
    const viaInline = await post('/chat/completions', {
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      authorization: `Bearer ${CLIENT_KEY}`,
      'x-gateway-config': JSON.stringify({ provider: '@local', api_key: CLIENT_KEY }),
    });
    assert.equal(viaInline.status, 200, JSON.stringify(viaInline.body));
    const viaSaved = await post('/chat/completions', { 'x-gateway-api-key': TEST_GATEWAY_KEY, authorization: `Bearer ${CLIENT_KEY}`, 'x-gateway-config': 'via-local' });
    assert.equal(viaSaved.status, 200, JSON.stringify(viaSaved.body));
    assert.equal(local.requests.length, 3);
    assert.ok(!everyHeaderValue(local).some((value) => value.includes(CLIENT_KEY)));
    for (const request of local.requests) assert.equal(request.headers['authorization'], undefined);
  });

  test('nor the client x-api-key on /v1/messages', async () => {
    local.reset();
    const answer = await post('/messages', { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-api-key': CLIENT_KEY, 'anthropic-version': '2023-06-01', 'x-gateway-provider': '@local' }, MESSAGE);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(local.requests.length, 1);
    assert.ok(!everyHeaderValue(local).some((value) => value.includes(CLIENT_KEY)));
  });

  test('a saved provider that opts in (forwardClientCredential) gets the client key the request names it with', async () => {
    local.reset();
    const answer = await post('/chat/completions', { 'x-gateway-api-key': TEST_GATEWAY_KEY, authorization: `Bearer ${CLIENT_KEY}`, 'x-gateway-provider': '@local-open' });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(local.requests[0]?.headers['authorization'], `Bearer ${CLIENT_KEY}`);
  });
});
