// OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (the OTLP default): spans reach the receiver as
// protobuf on /v1/traces, carrying the continued trace id.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';

describe('OTLP/HTTP protobuf', () => {
  test('the request span is exported as protobuf', async () => {
    const bodies: Array<{ type: string; body: Buffer }> = [];
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/v1/traces') bodies.push({ type: String(request.headers['content-type']), body: Buffer.concat(chunks) });
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    process.env['OTEL_TRACES_EXPORTER'] = 'otlp';
    process.env['OTEL_EXPORTER_OTLP_PROTOCOL'] = 'http/protobuf';
    process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    process.env['OTEL_BSP_SCHEDULE_DELAY'] = '20';
    const { startMockOpenAI } = await import('../fixtures/mock-openai.ts');
    const { baseState, startHarness } = await import('../helpers/gateway-harness.ts');
    const mock = await startMockOpenAI({ apiKey: 'sk-proto' });
    const harness = await startHarness({ state: baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-proto', customHost: mock.url }] }) });
    try {
      const client = harness.client({ 'x-gateway-config': JSON.stringify({ provider: '@mock' }), traceparent: `00-${TRACE}-b7ad6b7169203331-01` });
      await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      const traceBytes = Buffer.from(TRACE, 'hex');
      await eventually(() => bodies.some(({ body }) => body.includes(traceBytes)), 'a protobuf export with the trace id', { timeoutMs: 5000 });
      assert.ok(bodies.every(({ type }) => type.includes('application/x-protobuf')));
    } finally {
      await harness.close();
      await mock.close();
      receiver.close();
    }
  });
});
