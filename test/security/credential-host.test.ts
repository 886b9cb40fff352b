// Finding 2: a saved credential (x-gateway-provider @slug, a virtual key, a saved provider in
// an inline config) together with a host the request chose (x-gateway-custom-host, an inline
// custom_host — inherited or not — or an Azure resource name) sent the organisation's key to
// that host. Each case must be a 400 naming the conflict, and the attacker's host must see
// nothing. Hosts the operator configured (saved providers, saved configs) keep working.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const SAVED_KEY = 'sk-saved-org-key-0123456789abcdefghij';
const CLIENT_KEY = 'sk-client-own-key-0123456789abcdefgh';
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

let home: MockOpenAI;
let attacker: MockOpenAI;
let harness: Harness;

before(async () => {
  home = await startMockOpenAI({ apiKey: SAVED_KEY });
  attacker = await startMockOpenAI();
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'org', provider: 'openai', apiKey: SAVED_KEY, customHost: home.url, virtualKey: 'vk-org' },
        { slug: 'azure-org', provider: 'azure-openai', apiKey: SAVED_KEY, options: { resourceName: 'org-resource', deploymentId: 'gpt4o', apiVersion: '2024-10-21' } },
      ],
      configs: [
        // The operator may point a saved provider anywhere: this is trusted.
        { id: 'operator-routed', config: { provider: '@org', custom_host: home.url } },
      ],
    }),
  });
});

after(async () => {
  await harness?.close();
  await home?.close();
  await attacker?.close();
});

async function chat(headers: Record<string, string>): Promise<{ status: number; body: { error?: { code?: string; param?: string | null; message?: string } } }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
    body: CHAT,
  });
  return { status: response.status, body: (await response.json()) as never };
}

describe('saved credentials stay with their hosts', () => {
  const conflicts: Array<[string, () => Record<string, string>]> = [
    ['@slug + x-gateway-custom-host', () => ({ 'x-gateway-provider': '@org', 'x-gateway-custom-host': attacker.url })],
    ['virtual key + x-gateway-custom-host', () => ({ 'x-gateway-virtual-key': 'vk-org', 'x-gateway-custom-host': attacker.url })],
    ['inline config: saved provider + custom_host', () => ({ 'x-gateway-config': JSON.stringify({ provider: '@org', custom_host: attacker.url }) })],
    ['inline config: virtual_key + custom_host', () => ({ 'x-gateway-config': JSON.stringify({ virtual_key: 'vk-org', custom_host: attacker.url }) })],
    [
      'inline config: custom_host inherited from the parent',
      () => ({ 'x-gateway-config': JSON.stringify({ strategy: { mode: 'fallback' }, custom_host: attacker.url, targets: [{ provider: '@org' }] }) }),
    ],
    [
      'inline config with no provider + @slug header',
      () => ({ 'x-gateway-config': JSON.stringify({ custom_host: attacker.url, retry: { attempts: 1 } }), 'x-gateway-provider': '@org' }),
    ],
    [
      'saved Azure key + a resource name from the request',
      () => ({ 'x-gateway-provider': '@azure-org', 'x-gateway-clouda-resource-name': 'attacker-resource' }),
    ],
    [
      'saved Azure key + a resource name in an inline config',
      () => ({ 'x-gateway-config': JSON.stringify({ provider: '@azure-org', resource_name: 'attacker-resource' }) }),
    ],
  ];

  for (const [name, headers] of conflicts) {
    test(`${name} → 400 AIGW_ERR_CREDENTIAL_HOST_CONFLICT, nothing sent`, async () => {
      const before = attacker.requests.length;
      const { status, body } = await chat(headers());
      assert.equal(status, 400, JSON.stringify(body));
      assert.equal(body.error?.code, 'AIGW_ERR_CREDENTIAL_HOST_CONFLICT');
      assert.ok(body.error?.param, 'names the field in conflict');
      assert.equal(attacker.requests.length, before, 'the request-chosen host saw no request');
      assert.ok(!JSON.stringify(body).includes(SAVED_KEY));
    });
  }

  test('a host chosen by the request works with a credential from the same request', async () => {
    const { status } = await chat({ 'x-gateway-provider': 'openai', authorization: `Bearer ${CLIENT_KEY}`, 'x-gateway-custom-host': attacker.url });
    assert.equal(status, 200);
    assert.equal(attacker.requests.at(-1)?.headers['authorization'], `Bearer ${CLIENT_KEY}`);
  });

  test('operator-written hosts keep working: the saved provider, and a saved config combining them', async () => {
    assert.equal((await chat({ 'x-gateway-provider': '@org' })).status, 200);
    assert.equal((await chat({ 'x-gateway-virtual-key': 'vk-org' })).status, 200);
    assert.equal((await chat({ 'x-gateway-config': 'operator-routed' })).status, 200);
    assert.equal((await chat({ 'x-gateway-config': JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@org' }] }) })).status, 200);
    assert.ok(home.requests.every((request) => request.headers['authorization'] === `Bearer ${SAVED_KEY}`));
  });
});
