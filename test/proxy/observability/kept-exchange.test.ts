// The last small exchange stays reachable until the next one is recorded, so the idle release's
// full collection does not take its hidden classes (and the optimised code built on them) away.
// A large body is never what is kept, and probes or bodiless requests do not replace it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keptExchangeRequest } from '../../../proxy/observability/request-finish.ts';
import { startMockOpenAI } from '../../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY } from '../../helpers/gateway-harness.ts';

test('finishRequest keeps the last small exchange, never a large one, and ignores probes', async () => {
  const mock = await startMockOpenAI({ apiKey: 'sk-kept' });
  const harness = await startHarness({ state: baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-kept', customHost: mock.url }] }) });
  try {
    const ask = (mark: string, content: string) =>
      harness
        .client({ 'x-gateway-config': JSON.stringify({ provider: '@mock' }), 'x-mark': mark })
        .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
    const keptMark = (): unknown => keptExchangeRequest()?.headers['x-mark'];

    await ask('first', 'hi');
    assert.equal(keptMark(), 'first');

    const health = await fetch(`${harness.gateway.origin}/health`);
    await health.arrayBuffer();
    assert.equal(keptMark(), 'first', 'a probe does not replace it');

    await ask('large', 'x'.repeat(300 * 1024));
    assert.equal(keptMark(), 'first', 'a body over 256 KiB is not kept');

    const models = await fetch(`${harness.gateway.origin}/v1/models`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    await models.arrayBuffer();
    assert.equal(keptMark(), 'first', 'a request without a body does not replace it');

    await ask('second', 'hello again');
    assert.equal(keptMark(), 'second');
  } finally {
    await harness.close();
    await mock.close();
  }
});
