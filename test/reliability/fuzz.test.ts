// Property-based fuzzing (fast-check): hostile bodies, headers and state files get 4xx or
// valid answers — never a 500, a crash or a hang — and the validators never throw.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { parseRoutingConfig } from '../../proxy/config/routing-config-validation.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { validateRequestBody } from '../../proxy/openai/body-validation.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

// Bounded so the default suite stays fast; `FUZZ_RUNS` raises it for the reliability run.
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 150);
const ROUTES = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'] as const;
const ENDPOINTS = ['chat.completions', 'completions', 'embeddings', 'responses'] as const;

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: 'sk-m', customHost: mock.url }],
      configs: [{ id: 'fb', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@mock' }, { provider: '@mock' }] } }],
    }),
  });
});
after(async () => {
  await harness.close();
  await mock.close();
});

const jsonValue = fc.jsonValue({ maxDepth: 4 });
// Bodies that look like requests: the right field names with wrong or odd values.
const requestLike = fc.record(
  {
    model: fc.oneof(fc.string(), jsonValue),
    messages: fc.oneof(fc.array(fc.record({ role: fc.oneof(fc.constantFrom('user', 'system', 'assistant', 'tool'), fc.string()), content: jsonValue })), jsonValue),
    prompt: jsonValue,
    input: jsonValue,
    temperature: fc.oneof(fc.double(), jsonValue),
    top_p: fc.oneof(fc.double(), jsonValue),
    n: fc.oneof(fc.integer(), jsonValue),
    stop: jsonValue,
    stream: fc.oneof(fc.boolean(), jsonValue),
    stream_options: jsonValue,
    logit_bias: fc.dictionary(fc.string(), fc.oneof(fc.double(), jsonValue)),
    metadata: jsonValue,
    include: jsonValue,
  },
  { requiredKeys: [] },
);

async function post(route: string, body: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(`${harness.gateway.origin}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
    body,
  });
  const text = await response.text();
  if (response.status >= 400) {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } };
    assert.equal(typeof parsed.error?.message, 'string', `OpenAI-shaped error: ${text}`);
    assert.equal(typeof parsed.error?.type, 'string');
  }
  return response.status;
}

describe('fuzzing the HTTP surface', () => {
  test('random request-like bodies: 2xx or 4xx, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), requestLike, async (route, body) => {
        const status = await post(route, JSON.stringify(body), { 'x-gateway-virtual-key': 'vk-mock' });
        assert.ok(status < 500, `${route} answered ${status} for ${JSON.stringify(body)}`);
      }),
      { numRuns: RUNS },
    );
  });

  test('arbitrary bytes as a body: 4xx, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), fc.string({ maxLength: 200 }), async (route, body) => {
        const status = await post(route, body, { 'x-gateway-virtual-key': 'vk-mock' });
        assert.ok(status < 500 && (status >= 400 || body.trim().startsWith('{')), `${status} for ${JSON.stringify(body)}`);
      }),
      { numRuns: RUNS },
    );
  });

  test('hostile gateway headers (config JSON, metadata, forward-headers, timeouts, provider): never 5xx', async () => {
    const headerValue = fc.oneof(fc.string({ maxLength: 80 }), jsonValue.map((value) => JSON.stringify(value)));
    const printable = (value: string): string => value.replace(/[^\x20-\x7e]/g, '');
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            'x-gateway-config': fc.oneof(headerValue, fc.constant('fb'), fc.constant('{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"@mock","weight":0}]}')),
            'x-gateway-metadata': headerValue,
            'x-gateway-forward-headers': headerValue,
            'x-gateway-request-timeout': fc.oneof(headerValue, fc.integer().map(String)),
            'x-gateway-provider': headerValue,
            'x-gateway-custom-host': headerValue,
            'x-gateway-trace-id': headerValue,
          },
          { requiredKeys: [] },
        ),
        async (headers) => {
          const clean = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, printable(value)]));
          const status = await post('/v1/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), clean);
          // 503 is a legitimate answer for a config whose every target has weight 0.
          assert.ok(status < 500 || status === 503, `${status} for ${JSON.stringify(clean)}`);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('fuzzing the validators', () => {
  test('parseRoutingConfig never throws', () => {
    fc.assert(
      fc.property(fc.oneof(jsonValue, fc.record({ strategy: jsonValue, targets: jsonValue, provider: jsonValue, retry: jsonValue, cb_config: jsonValue }, { requiredKeys: [] })), (input) => {
        const result = parseRoutingConfig(input);
        assert.equal(typeof result.success, 'boolean');
      }),
      { numRuns: RUNS * 4 },
    );
  });

  test('validateRequestBody never throws', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ENDPOINTS), fc.oneof(jsonValue, requestLike), (endpoint, body) => {
        validateRequestBody(endpoint, body);
      }),
      { numRuns: RUNS * 4 },
    );
  });

  test('state files: the loader never throws, whatever the YAML', () => {
    const yamlish = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.record({ apiKeys: jsonValue, providers: jsonValue, configs: jsonValue, prompts: jsonValue, rateLimitPolicies: jsonValue, egress: jsonValue }, { requiredKeys: [] }).map((doc) =>
        JSON.stringify(doc),
      ),
    );
    fc.assert(
      fc.property(yamlish, (text) => {
        const result = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
        assert.equal(typeof result.ok, 'boolean');
      }),
      { numRuns: RUNS * 4 },
    );
  });
});
