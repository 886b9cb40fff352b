// Finding 9: egress tightened by a reload applies at once, also to warm keep-alive
// connections — a request right after the reload must not ride a pooled socket to an
// origin the new policy denies.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

let mock: MockOpenAI;
let harness: Harness;
before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({ state: baseState({ egress: { clientAllow: ['127.0.0.0/8'] } }), reloadIntervalMs: 50 });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function chat(): Promise<{ status: number; code: string | undefined }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.url,
      authorization: 'Bearer sk-test-0123456789',
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = (await response.json()) as { error?: { code: string } };
  return { status: response.status, code: body.error?.code };
}

async function successfulReloads(): Promise<number> {
  const metric = await harness.gateway.metrics.configReloads.get();
  return metric.values.find((value) => value.labels['result'] === 'success')?.value ?? 0;
}

test('a reload that denies an origin closes the warm connections to it', { timeout: 20_000 }, async () => {
  assert.equal((await chat()).status, 200, 'allowed before the reload (the connection stays pooled)');
  assert.equal(mock.requests.length, 1);

  const before = await successfulReloads();
  await harness.writeState(baseState({ egress: { clientAllow: [] } }));
  await eventually(async () => (await successfulReloads()) > before, 'the reload', { timeoutMs: 5_000 });

  const after = await chat();
  assert.equal(after.status, 400);
  assert.equal(after.code, 'AIGW_ERR_EGRESS_DENIED');
  assert.equal(mock.requests.length, 1, 'nothing reached the now-denied origin');
});
