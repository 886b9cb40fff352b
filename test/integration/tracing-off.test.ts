// Without OTEL_TRACES_EXPORTER, tracing costs nothing: no OpenTelemetry SDK or exporter
// module is loaded when the gateway starts and serves, and requests carry no traceparent
// upstream. (The no-op @opentelemetry/api is prom-client's own dependency, loaded by it.)
import assert from 'node:assert/strict';
import { registerHooks } from 'node:module';
import { describe, test } from 'node:test';

const loaded: string[] = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    if ((specifier.includes('@opentelemetry/') && specifier !== '@opentelemetry/api') || specifier.includes('tracing-sdk')) loaded.push(`${specifier} from ${context.parentURL}`);
    return nextResolve(specifier, context);
  },
});

describe('tracing off', () => {
  test('no OpenTelemetry code is loaded and nothing is sent upstream', async () => {
    delete process.env['OTEL_TRACES_EXPORTER'];
    const { startMockOpenAI } = await import('../fixtures/mock-openai.ts');
    const { baseState, startHarness } = await import('../helpers/gateway-harness.ts');
    const mock = await startMockOpenAI({ apiKey: 'sk-off' });
    const harness = await startHarness({ state: baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-off', customHost: mock.url }] }) });
    try {
      const client = harness.client({ 'x-gateway-config': JSON.stringify({ provider: '@mock' }) });
      await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      assert.deepEqual(loaded, []);
      assert.equal(mock.requests.at(-1)?.headers['traceparent'], undefined);
      const line = harness.logs.find((entry) => entry['msg'] === 'request');
      assert.ok(line !== undefined && !('otel_trace_id' in line));
    } finally {
      await harness.close();
      await mock.close();
    }
  });
});
