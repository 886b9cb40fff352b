// Finding: one `egress.allow` served both the operator's hosts and every client's custom
// host, so opening a range for an in-cluster model opened it to every key as an SSRF relay.
// Hosts a request chooses now pass their own list, `egress.clientAllow` (default: public
// addresses only); a client never inherits what the operator opened — not even through a
// pooled connection the operator's saved provider left warm.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const SAVED_KEY = 'sk-saved-in-cluster-0123456789abcdef';
const CLIENT_KEY = 'sk-client-own-key-0123456789abcdefgh';
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

let model: MockOpenAI;
before(async () => {
  model = await startMockOpenAI();
});
after(async () => model.close());

/** The operator opens loopback (its "in-cluster model") for a saved provider and a saved config. */
function state(clientAllow?: string[]) {
  return {
    apiKeys: [{ id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] }],
    providers: [
      { slug: 'local', provider: 'openai', apiKey: SAVED_KEY, customHost: model.url },
      { slug: 'azure-org', provider: 'azure-openai', apiKey: SAVED_KEY, options: { resourceName: 'org-resource', deploymentId: 'gpt4o', apiVersion: '2024-10-21' } },
    ],
    configs: [
      { id: 'local-model', config: { provider: 'openai', custom_host: model.url, api_key: SAVED_KEY } },
      { id: 'azure-saved', config: { provider: '@azure-org' } },
    ],
    egress: { allow: ['127.0.0.0/8'], ...(clientAllow === undefined ? {} : { clientAllow }) },
  };
}

async function send(harness: Harness, path: string, headers: Record<string, string>, body = CHAT) {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
    body,
  });
  return { status: response.status, body: (await response.json()) as { error?: { code?: string; param?: string | null; message?: string } } };
}

const clientHost = (): Record<string, string> => ({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': model.url, authorization: `Bearer ${CLIENT_KEY}` });

describe('egress.allow opens a range to the operator only', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: state() });
  });
  after(async () => harness.close());

  test("the operator's saved provider and saved config reach the range egress.allow opened", async () => {
    assert.equal((await send(harness, '/chat/completions', { 'x-gateway-provider': '@local' })).status, 200);
    assert.equal((await send(harness, '/chat/completions', { 'x-gateway-config': 'local-model' })).status, 200);
  });

  const denied: Array<[string, string, () => Record<string, string>, string?]> = [
    ['x-gateway-custom-host', '/chat/completions', clientHost],
    ['an inline config custom_host', '/chat/completions', () => ({ 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: CLIENT_KEY, custom_host: model.url }) })],
    [
      'an inline strategy whose target has a custom_host',
      '/chat/completions',
      () => ({ 'x-gateway-config': JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', api_key: CLIENT_KEY, custom_host: model.url }] }) }),
    ],
    ['x-gateway-custom-host on a forwarded route', '/images/generations', clientHost, JSON.stringify({ prompt: 'a cat' })],
  ];
  for (const [name, path, headers, body] of denied) {
    test(`${name} to that same range → 400 AIGW_ERR_EGRESS_DENIED, nothing sent`, async () => {
      // A connection to the model is pooled (the saved provider just used it): it must not be reused.
      assert.equal((await send(harness, '/chat/completions', { 'x-gateway-provider': '@local' })).status, 200);
      const before = model.requests.length;
      const { status, body: answer } = await send(harness, path, headers(), body);
      assert.equal(status, 400, JSON.stringify(answer));
      assert.equal(answer.error?.code, 'AIGW_ERR_EGRESS_DENIED');
      assert.match(answer.error?.message ?? '', /egress\.clientAllow/);
      assert.equal(model.requests.length, before, 'the in-cluster model saw nothing from the client');
    });
  }

  test("a request header cannot move a saved config's saved provider to another host (Azure resource name)", async () => {
    const { status, body } = await send(harness, '/chat/completions', { 'x-gateway-config': 'azure-saved', 'x-gateway-clouda-resource-name': 'attacker-resource' });
    assert.equal(status, 400, JSON.stringify(body));
    assert.equal(body.error?.code, 'AIGW_ERR_CREDENTIAL_HOST_CONFLICT');
  });
});

describe('egress.clientAllow opens a range to clients', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: state(['127.0.0.0/8']) });
  });
  after(async () => harness.close());

  test('a custom host in egress.clientAllow works with the client credential; the saved provider still works', async () => {
    assert.equal((await send(harness, '/chat/completions', clientHost())).status, 200);
    assert.equal(model.requests.at(-1)?.headers['authorization'], `Bearer ${CLIENT_KEY}`);
    assert.equal((await send(harness, '/chat/completions', { 'x-gateway-provider': '@local' })).status, 200);
    assert.equal(model.requests.at(-1)?.headers['authorization'], `Bearer ${SAVED_KEY}`);
  });
});
