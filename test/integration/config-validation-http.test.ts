// Every config rule over HTTP: a violating x-gateway-config gets 400 naming the path; a
// sample of each of the spec's 18 key sets passes validation (whatever happens after).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { CONFIG_VIOLATIONS, KEY_SET_SAMPLES } from '../fixtures/routing-config-cases.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  // Saved objects the key-set samples name (prompt_id, a saved guardrail).
  harness = await startHarness({
    state: baseState({ guardrails: [{ id: 'no-pii', checks: [{ id: 'default.pii', parameters: {} }] }] }),
  });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function send(config: unknown): Promise<{ status: number; error: { code?: string; message: string; param?: string } | undefined }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      'x-gateway-config': JSON.stringify(config),
      // Settings-only configs take their provider from these.
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.url,
      authorization: 'Bearer sk-test',
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = (await response.json()) as { error?: { code?: string; message: string; param?: string } };
  return { status: response.status, error: body.error };
}

describe('x-gateway-config validation over HTTP', () => {
  for (const [name, config, expected] of CONFIG_VIOLATIONS) {
    if (typeof config !== 'object' || config === null || Array.isArray(config)) continue; // not sendable as a JSON object
    test(`400: ${name}`, async () => {
      const { status, error } = await send(config);
      assert.equal(status, 400);
      assert.equal(error?.code, 'AIGW_ERR_INVALID_CONFIG');
      assert.equal(error?.param, 'x-gateway-config');
      assert.ok(error?.message.includes(expected), `expected "${expected}" in: ${error?.message}`);
    });
  }

  KEY_SET_SAMPLES.forEach((sample, index) => {
    test(`key set ${index + 1} passes validation`, async () => {
      const { error } = await send(sample);
      assert.notEqual(error?.code, 'AIGW_ERR_INVALID_CONFIG', error?.message);
    });
  });
});
