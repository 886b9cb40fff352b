// OpenTelemetry tracing switched on by the standard environment variables alone, exporting
// OTLP/HTTP JSON to a local receiver: one server span per request continuing the caller's
// traceparent, one client span per upstream attempt (a retry is its own span with its
// status), a guardrail span, GenAI attributes without prompt text, traceparent sent to the
// provider, and the OTel trace id in the request log line.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

const received: OtlpSpan[] = [];
let rawBodies = '';
let receiver: Server;

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';
const SECRET_PROMPT = 'the-prompt-text-must-not-be-traced';

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes?.find((entry) => entry.key === key)?.value;
  if (value === undefined) return undefined;
  const inner = value['stringValue'] ?? value['intValue'] ?? value['doubleValue'] ?? value['boolValue'];
  return typeof inner === 'string' && /^\d+$/.test(inner) && value['intValue'] !== undefined ? Number(inner) : inner;
}

before(async () => {
  receiver = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces' && /json/.test(request.headers['content-type'] ?? '')) {
        rawBodies += body;
        const parsed = JSON.parse(body) as { resourceSpans: Array<{ resource: unknown; scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
        for (const resource of parsed.resourceSpans) for (const scope of resource.scopeSpans) received.push(...scope.spans);
        rawBodies += JSON.stringify(parsed.resourceSpans.map((resource) => resource.resource));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  // Only the environment: the gateway is started exactly as in production.
  process.env['OTEL_TRACES_EXPORTER'] = 'otlp';
  process.env['OTEL_EXPORTER_OTLP_PROTOCOL'] = 'http/json';
  process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  process.env['OTEL_SERVICE_NAME'] = 'aigateway-tracing-test';
  process.env['OTEL_BSP_SCHEDULE_DELAY'] = '20';
});

after(() => receiver.close());

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  test('server span, a client span per attempt, guardrail span, traceparent in and out, trace id in the log', async () => {
    const { startMockOpenAI } = await import('../fixtures/mock-openai.ts');
    const { baseState, startHarness } = await import('../helpers/gateway-harness.ts');
    const mock = await startMockOpenAI({ apiKey: 'sk-traced' });
    const harness = await startHarness({
      state: baseState({
        providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-traced', customHost: mock.url }],
        configs: [
          {
            id: 'traced',
            config: { provider: '@mock', retry: { attempts: 1, on_status_codes: [500] }, input_guardrails: [{ 'default.wordCount': { minWords: 1, maxWords: 100 } }] },
          },
        ],
      }),
    });
    try {
      mock.enqueue({ status: 500, body: { error: { message: 'try again', type: 'server_error', param: null, code: null } } });
      const gatewayTraceId = 'gw-trace-for-otel-test-012345678';
      const client = harness.client({ 'x-gateway-config': 'traced', traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`, 'x-gateway-trace-id': gatewayTraceId });
      const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: SECRET_PROMPT }] });
      assert.ok(answer.choices.length > 0);

      await eventually(() => received.filter((span) => span.traceId === INCOMING_TRACE).length >= 4, 'the spans exported', { timeoutMs: 5000 });
      const spans = received.filter((span) => span.traceId === INCOMING_TRACE);
      const server = spans.find((span) => span.kind === 2);
      assert.ok(server !== undefined, 'a server span');
      assert.equal(server.parentSpanId, INCOMING_SPAN, 'the caller’s traceparent is continued');
      assert.equal(attribute(server, 'aigateway.trace_id'), gatewayTraceId);
      assert.equal(attribute(server, 'http.response.status_code'), 200);
      assert.equal(attribute(server, 'gen_ai.operation.name'), 'chat');
      assert.equal(attribute(server, 'gen_ai.provider.name'), 'openai');
      assert.equal(attribute(server, 'gen_ai.request.model'), 'gpt-4o-mini');
      assert.equal(typeof attribute(server, 'gen_ai.response.model'), 'string');
      assert.ok(Number(attribute(server, 'gen_ai.usage.input_tokens')) > 0);
      assert.ok(Number(attribute(server, 'gen_ai.usage.output_tokens')) > 0);

      const clients = spans.filter((span) => span.kind === 3);
      assert.deepEqual(clients.map((span) => attribute(span, 'http.response.status_code')).sort(), [200, 500], 'the retry is its own client span');
      for (const span of clients) assert.equal(span.parentSpanId, server.spanId);
      const guard = spans.find((span) => span.name === 'aigateway.guardrails.input');
      assert.ok(guard !== undefined && guard.parentSpanId === server.spanId, 'a guardrail span under the request');

      // The provider got the traceparent of the attempt that reached it.
      const sentUp = mock.requests.map((request) => request.headers['traceparent']);
      for (const [index, value] of sentUp.entries()) {
        assert.match(String(value), new RegExp(`^00-${INCOMING_TRACE}-[0-9a-f]{16}-01$`), `attempt ${index}`);
      }
      const clientIds = new Set(clients.map((span) => span.spanId));
      for (const value of sentUp) assert.ok(clientIds.has(String(value).split('-')[2] ?? ''), 'each traceparent names its client span');

      // The log line leads to the trace; no prompt text anywhere in the export.
      await eventually(() => harness.logs.some((line) => line['trace_id'] === gatewayTraceId), 'the log line', { timeoutMs: 10_000 });
      assert.equal(harness.logs.find((line) => line['trace_id'] === gatewayTraceId)?.['otel_trace_id'], INCOMING_TRACE);
      assert.ok(!rawBodies.includes(SECRET_PROMPT), 'prompt text is never exported');
      assert.match(rawBodies, /aigateway-tracing-test/, 'OTEL_SERVICE_NAME names the service');

      // A stream records its time to first token; a request without traceparent starts a new trace.
      const stream = await harness.client({ 'x-gateway-config': 'traced' }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
      for await (const chunk of stream) assert.ok(chunk !== undefined);
      await eventually(() => received.some((span) => span.kind === 2 && span.traceId !== INCOMING_TRACE && attribute(span, 'gen_ai.server.time_to_first_token') !== undefined), 'the stream span', { timeoutMs: 5000 });
    } finally {
      await harness.close();
      await mock.close();
    }
  });
});
