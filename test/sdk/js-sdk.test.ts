// The TypeScript SDK without a gateway: the parameter → header mapping, table-driven from
// test/sdk/header-mapping.json (which the Python SDK's tests read too, so both SDKs map
// identically), and what the Gateway client puts on the wire, seen through a recording fetch.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, test } from 'node:test';
import {
  createHeaders,
  DEFAULT_BASE_URL,
  Gateway,
  GATEWAY_PARAMETERS,
  GatewayClientError,
  nullableHeaders,
  requestOptions,
  type GatewayOptions,
  type GatewayParams,
} from '../../sdk/js/src/index.ts';

interface MappingCase {
  name: string;
  js: string;
  python: string;
  value: unknown;
  header: string;
  expected: string;
}
interface Fixture {
  parameters: Array<{ js: string; python: string; header: string }>;
  cases: MappingCase[];
  omitted: Array<{ name: string; js: string; value: unknown }>;
  invalid: Array<{ name: string; js: string; value: unknown }>;
  unknown: Array<{ name: string; js: string; suggestion_js: string }>;
  same_setting: Array<{ js: string; spec_js: string }>;
}

const fixture = JSON.parse(readFileSync(new URL('./header-mapping.json', import.meta.url), 'utf8')) as Fixture;

// Fixture values are untyped JSON: the cast is what lets bad values reach the runtime checks.
const params = (name: string, value: unknown): GatewayParams => ({ [name]: value }) as GatewayParams;

describe('createHeaders (header-mapping.json)', () => {
  test('the parameter table is the fixture’s, in order', () => {
    assert.deepEqual(
      GATEWAY_PARAMETERS.map(({ js, python, header }) => ({ js, python, header })),
      fixture.parameters,
    );
  });

  test('every parameter has a mapping case', () => {
    assert.deepEqual(new Set(fixture.cases.map((c) => c.js)), new Set(GATEWAY_PARAMETERS.map((p) => p.js)));
  });

  for (const c of fixture.cases) {
    test(`maps ${c.js}: ${c.name}`, () => {
      assert.deepEqual(createHeaders(params(c.js, c.value)), { [c.header]: c.expected });
    });
  }

  test('all parameters at once', () => {
    const all: Record<string, unknown> = {};
    const expected: Record<string, string> = {};
    const realNames = new Set(fixture.same_setting.map((pair) => pair.js));
    for (const c of fixture.cases) {
      if (c.js in all || realNames.has(c.js)) continue;
      all[c.js] = c.value;
      expected[c.header] = c.expected;
    }
    const headers = createHeaders(all as GatewayParams);
    assert.deepEqual(headers, expected);
    assert.equal(Object.keys(headers).length, GATEWAY_PARAMETERS.length - realNames.size);
  });

  for (const pair of fixture.same_setting) {
    test(`${pair.js} and ${pair.spec_js} name one setting: both at once is rejected`, () => {
      assert.throws(() => createHeaders({ [pair.js]: 'a', [pair.spec_js]: 'b' } as GatewayParams), {
        name: 'GatewayClientError',
        message: `${pair.js} and ${pair.spec_js} name the same setting: pass one of them.`,
      });
    });
  }

  test('a real vendor name in request options replaces a default sent under the spec name', () => {
    assert.deepEqual(nullableHeaders({ awsRegion: 'eu-west-1' }), { 'x-gateway-aws-region': 'eu-west-1', 'x-gateway-cloudC-region': null });
    assert.deepEqual(nullableHeaders({ cloudCRegion: 'eu-west-1' }), { 'x-gateway-cloudC-region': 'eu-west-1', 'x-gateway-aws-region': null });
    assert.deepEqual(nullableHeaders({ awsRegion: null }), { 'x-gateway-aws-region': null, 'x-gateway-cloudC-region': null });
  });

  for (const c of fixture.omitted) {
    test(`leaves the header out: ${c.name}`, () => {
      assert.deepEqual(createHeaders(params(c.js, c.value)), {});
    });
  }

  for (const c of fixture.invalid) {
    test(`rejects ${c.name}, naming the parameter`, () => {
      assert.throws(
        () => createHeaders(params(c.js, c.value)),
        (error: unknown) => error instanceof GatewayClientError && error.message.includes(c.js),
      );
    });
  }

  for (const c of fixture.unknown) {
    test(`rejects an unknown parameter with a suggestion: ${c.name}`, () => {
      assert.throws(() => createHeaders(params(c.js, 'x')), {
        name: 'GatewayClientError',
        message: `Unknown gateway parameter "${c.js}" (did you mean "${c.suggestion_js}"?).`,
      });
    });
  }

  test('JSON header values decode back to the parameter value', () => {
    for (const c of fixture.cases) {
      if (typeof c.value === 'object' && c.value !== null) assert.deepEqual(JSON.parse(c.expected), c.value, c.name);
    }
  });

  test('nullableHeaders and requestOptions keep null, which removes a default header in the openai SDK', () => {
    assert.deepEqual(nullableHeaders({ traceId: null, metadata: { a: 1 }, provider: undefined, cacheNamespace: '' }), {
      'x-gateway-trace-id': null,
      'x-gateway-metadata': '{"a":1}',
    });
    assert.deepEqual(requestOptions({ traceId: 't-1', metadata: null }), {
      headers: { 'x-gateway-trace-id': 't-1', 'x-gateway-metadata': null },
    });
  });
});

// ---- the Gateway client, through a recording fetch ----------------------------------------

interface Sent {
  method: string;
  url: string;
  headers: Headers;
  body: unknown;
}

function recordingFetch(sent: Sent[], reply: (request: Sent) => unknown = () => ({ ok: true })) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request: Sent = {
      method: init?.method ?? 'GET',
      url: String(input instanceof Request ? input.url : input),
      headers: new Headers(init?.headers),
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    };
    sent.push(request);
    return new Response(JSON.stringify(reply(request)), { status: 200, headers: { 'content-type': 'application/json' } });
  };
}

const chatReply = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
};

describe('Gateway', () => {
  let savedKey: string | undefined;
  let savedBaseURL: string | undefined;
  beforeEach(() => {
    savedKey = process.env['GATEWAY_API_KEY'];
    savedBaseURL = process.env['GATEWAY_BASE_URL'];
    delete process.env['GATEWAY_API_KEY'];
    delete process.env['GATEWAY_BASE_URL'];
  });
  afterEach(() => {
    if (savedKey === undefined) delete process.env['GATEWAY_API_KEY'];
    else process.env['GATEWAY_API_KEY'] = savedKey;
    if (savedBaseURL === undefined) delete process.env['GATEWAY_BASE_URL'];
    else process.env['GATEWAY_BASE_URL'] = savedBaseURL;
  });

  const make = (sent: Sent[], options: GatewayOptions = {}) =>
    new Gateway({ apiKey: 'gw-unit', baseURL: 'http://gw.test/v1', maxRetries: 0, fetch: recordingFetch(sent, () => chatReply), ...options });
  const chat = (gateway: Gateway, options?: Parameters<Gateway['chat']['completions']['create']>[1]) =>
    gateway.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, options);

  test('a missing key is a clear error at construction', () => {
    assert.throws(() => new Gateway(), { name: 'GatewayClientError', message: /GATEWAY_API_KEY/ });
    assert.throws(() => new Gateway({ apiKey: '' }), GatewayClientError);
  });

  test('the key and base URL come from the environment; the default base URL is npm start’s', () => {
    process.env['GATEWAY_API_KEY'] = 'gw-env';
    const gateway = new Gateway();
    assert.equal(gateway.gatewayApiKey, 'gw-env');
    assert.equal(gateway.gatewayHeaders['x-gateway-api-key'], 'gw-env');
    assert.equal(gateway.baseURL, DEFAULT_BASE_URL);
    process.env['GATEWAY_BASE_URL'] = 'http://gw.internal:8787/v1';
    assert.equal(new Gateway().baseURL, 'http://gw.internal:8787/v1');
    assert.equal(new Gateway({ apiKey: 'gw-explicit' }).gatewayApiKey, 'gw-explicit');
  });

  test('a bad parameter fails at construction', () => {
    assert.throws(() => new Gateway({ apiKey: 'k', requestTimeout: 1.5 }), GatewayClientError);
    assert.throws(() => new Gateway({ apiKey: 'k', ...({ tracId: 'x' } as GatewayParams) }), /did you mean "traceId"/);
  });

  test('is an openai client sending the gateway headers and no Authorization without a provider token', async () => {
    const sent: Sent[] = [];
    const gateway = make(sent, { provider: '@openai-prod', traceId: 't-1', metadata: { _user: 'u-1' }, config: { retry: { attempts: 2 } } });
    const completion = await chat(gateway);
    assert.equal(completion.choices[0]?.message.content, 'hi');
    const request = sent[0];
    assert.ok(request);
    assert.equal(request.method, 'POST');
    assert.equal(request.url, 'http://gw.test/v1/chat/completions');
    assert.equal(request.headers.get('x-gateway-api-key'), 'gw-unit');
    assert.equal(request.headers.get('x-gateway-provider'), '@openai-prod');
    assert.equal(request.headers.get('x-gateway-trace-id'), 't-1');
    assert.equal(request.headers.get('x-gateway-metadata'), '{"_user":"u-1"}');
    assert.equal(request.headers.get('x-gateway-config'), '{"retry":{"attempts":2}}');
    assert.equal(request.headers.get('authorization'), null, 'no placeholder and never the gateway key as a provider token');
    assert.equal(request.headers.get('openai-organization'), null);
  });

  test('a provider token is sent as Authorization: Bearer', async () => {
    const sent: Sent[] = [];
    await chat(make(sent, { provider: 'openai', authorization: 'sk-direct' }));
    assert.equal(sent[0]?.headers.get('authorization'), 'Bearer sk-direct');
  });

  test('defaultHeaders add headers (e.g. forwarded ones) and win over gateway headers of any case', async () => {
    const sent: Sent[] = [];
    await chat(make(sent, { traceId: 't-1', forwardHeaders: ['X-Tenant-Id'], defaultHeaders: { 'X-Tenant-Id': 'acme', 'X-Gateway-Trace-Id': 't-2' } }));
    assert.equal(sent[0]?.headers.get('x-tenant-id'), 'acme');
    assert.equal(sent[0]?.headers.get('x-gateway-trace-id'), 't-2');
    assert.equal(sent[0]?.headers.get('x-gateway-forward-headers'), '["X-Tenant-Id"]');
  });

  test('withOptions returns a new Gateway with some parameters replaced; the original is unchanged', async () => {
    const sent: Sent[] = [];
    const base = make(sent, { provider: '@p', traceId: 't-1', metadata: { _user: 'a' } });
    const child = base.withOptions({ traceId: 'job-7', metadata: null, cacheNamespace: 'ns' });
    assert.ok(child instanceof Gateway);
    assert.ok(child.prompts !== base.prompts);
    await chat(child);
    await chat(base);
    const [fromChild, fromBase] = sent;
    assert.equal(fromChild?.headers.get('x-gateway-trace-id'), 'job-7');
    assert.equal(fromChild?.headers.get('x-gateway-metadata'), null);
    assert.equal(fromChild?.headers.get('x-gateway-cache-namespace'), 'ns');
    assert.equal(fromChild?.headers.get('x-gateway-provider'), '@p');
    assert.equal(fromChild?.url, 'http://gw.test/v1/chat/completions');
    assert.equal(fromBase?.headers.get('x-gateway-trace-id'), 't-1');
    assert.equal(fromBase?.headers.get('x-gateway-metadata'), '{"_user":"a"}');
    assert.throws(() => base.withOptions({ requestTimeout: -1 }), GatewayClientError);
  });

  test('a real vendor name replaces the same setting given under the spec name, in withOptions and for one call', async () => {
    const sent: Sent[] = [];
    const base = make(sent, { cloudCRegion: 'us-east-1' });
    await chat(base.withOptions({ awsRegion: 'eu-west-1' }));
    await chat(base, base.requestOptions({ awsRegion: 'ap-south-1' }));
    const [fromChild, once] = sent;
    assert.equal(fromChild?.headers.get('x-gateway-aws-region'), 'eu-west-1');
    assert.equal(fromChild?.headers.get('x-gateway-cloudC-region'), null);
    assert.equal(once?.headers.get('x-gateway-aws-region'), 'ap-south-1');
    assert.equal(once?.headers.get('x-gateway-cloudC-region'), null);
  });

  test('requestOptions override parameters for one call; null removes a default', async () => {
    const sent: Sent[] = [];
    const gateway = make(sent, { traceId: 't-1', metadata: { _user: 'a' } });
    await chat(gateway, gateway.requestOptions({ traceId: 't-once', metadata: null }));
    await chat(gateway);
    assert.equal(sent[0]?.headers.get('x-gateway-trace-id'), 't-once');
    assert.equal(sent[0]?.headers.get('x-gateway-metadata'), null);
    assert.equal(sent[1]?.headers.get('x-gateway-trace-id'), 't-1');
  });

  test('helpers call the gateway’s own endpoints with the gateway headers', async () => {
    const sent: Sent[] = [];
    const gateway = make(sent, { traceId: 't-h' });
    await gateway.prompts.render('support/reply', { variables: { tone: 'friendly' }, temperature: 0.7 });
    await gateway.policies.rateLimits.create({ conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 5 });
    await gateway.policies.rateLimits.list({ status: 'archived', page_size: 10 });
    await gateway.policies.rateLimits.retrieve('p 1');
    await gateway.policies.rateLimits.archive('p-1');
    await gateway.logs.list({ trace_id: 't-1', metadata: { _user: 'u-1', team: 'a b' }, limit: 5 });
    assert.deepEqual(
      sent.map((s) => [s.method, s.url, s.body]),
      [
        ['POST', 'http://gw.test/v1/prompts/support%2Freply/render', { variables: { tone: 'friendly' }, temperature: 0.7 }],
        ['POST', 'http://gw.test/v1/policies/rate-limits', { conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 5 }],
        ['GET', 'http://gw.test/v1/policies/rate-limits?status=archived&page_size=10', undefined],
        ['GET', 'http://gw.test/v1/policies/rate-limits/p%201', undefined],
        ['PATCH', 'http://gw.test/v1/policies/rate-limits/p-1', { status: 'archived' }],
        ['GET', 'http://gw.test/v1/logs?trace_id=t-1&limit=5&metadata._user=u-1&metadata.team=a%20b', undefined],
      ],
    );
    for (const s of sent) {
      assert.equal(s.headers.get('x-gateway-api-key'), 'gw-unit');
      assert.equal(s.headers.get('x-gateway-trace-id'), 't-h');
    }
  });
});
