// Routing modes end to end: single, fallback, loadbalance, conditional, nesting,
// inheritance, override_params and forward_headers — official openai SDK → gateway → mocks.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, seededRandom, startHarness, type Harness } from '../helpers/gateway-harness.ts';

const mocks: Record<'a' | 'b' | 'c', MockOpenAI> = {} as Record<'a' | 'b' | 'c', MockOpenAI>;
let harness: Harness;
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };

before(async () => {
  for (const name of ['a', 'b', 'c'] as const) mocks[name] = await startMockOpenAI({ replyText: `from ${name}` });
  harness = await startHarness({
    state: baseState({
      providers: (['a', 'b', 'c'] as const).map((name) => ({ slug: name, provider: 'openai', apiKey: `sk-${name}`, customHost: mocks[name].url })),
      configs: [
        { id: 'fb', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@a' }, { provider: '@b' }] } },
        {
          id: 'nested',
          config: {
            strategy: {
              mode: 'conditional',
              conditions: [
                { query: { 'metadata.plan': 'pro' }, then: 'pro' },
                { query: { 'params.model': { $regex: '^cheap' } }, then: 'cheap' },
              ],
              default: 'rest',
            },
            targets: [
              {
                name: 'pro',
                strategy: { mode: 'loadbalance' },
                targets: [
                  { weight: 1, strategy: { mode: 'fallback' }, targets: [{ provider: '@a' }, { provider: '@b' }] },
                  { weight: 0, provider: '@c' },
                ],
              },
              { name: 'cheap', provider: '@b' },
              { name: 'rest', provider: '@c' },
            ],
          },
        },
      ],
    }),
    random: seededRandom(7),
  });
});

after(async () => {
  await harness.close();
  for (const mock of Object.values(mocks)) await mock.close();
});

beforeEach(() => {
  for (const mock of Object.values(mocks)) mock.reset();
});

function withConfig(config: unknown, extra: Record<string, string> = {}): OpenAI {
  return harness.client({ 'x-gateway-config': typeof config === 'string' ? config : JSON.stringify(config), ...extra });
}

async function ask(client: OpenAI, body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = CHAT) {
  const { data, response } = await client.chat.completions.create(body).withResponse();
  return { text: data.choices[0]?.message.content, index: response.headers.get('x-gateway-last-used-option-index'), headers: response.headers };
}

function counts(): string {
  return `a=${mocks.a.requests.length} b=${mocks.b.requests.length} c=${mocks.c.requests.length}`;
}

describe('single', () => {
  test('mode single over one target', async () => {
    const result = await ask(withConfig({ strategy: { mode: 'single' }, targets: [{ provider: '@b' }] }));
    assert.equal(result.text, 'from b');
    assert.equal(result.index, 'config.targets[0]');
  });
});

describe('fallback', () => {
  test('moves on after a 5xx; the answering path is reported', async () => {
    mocks.a.enqueue({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
    const result = await ask(withConfig('fb'));
    assert.equal(result.text, 'from b');
    assert.equal(result.index, 'config.targets[1]');
    assert.equal(counts(), 'a=1 b=1 c=0');
  });

  test('moves on after any non-2xx, a network error and a timeout', async () => {
    mocks.a.enqueue({ status: 404, body: { error: { message: 'no such model' } } });
    assert.equal((await ask(withConfig('fb'))).text, 'from b');
    const unreachable = { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', api_key: 'k', custom_host: 'http://127.0.0.1:1/v1' }, { provider: '@b' }] };
    assert.equal((await ask(withConfig(unreachable))).text, 'from b');
    // a holds its answer until b has answered: only a's request_timeout can move on.
    let release: () => void = () => undefined;
    mocks.a.enqueue({ until: new Promise<void>((resolve) => (release = resolve)) });
    const slow = { strategy: { mode: 'fallback' }, targets: [{ provider: '@a', request_timeout: 100 }, { provider: '@b' }] };
    try {
      assert.equal((await ask(withConfig(slow))).text, 'from b');
      await mocks.a.waitForAborted(1);
    } finally {
      release();
    }
  });

  test('with on_status_codes only the listed statuses fall back (strategy or target level)', async () => {
    const config = { strategy: { mode: 'fallback', on_status_codes: [429] }, targets: [{ provider: '@a' }, { provider: '@b' }] };
    mocks.a.enqueue({ status: 500, body: { error: { message: 'boom' } } });
    const error = await withConfig(config).chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.InternalServerError);
    assert.equal(counts(), 'a=1 b=0 c=0');
    mocks.a.enqueue({ status: 429, body: { error: { message: 'slow down' } } });
    assert.equal((await ask(withConfig(config))).text, 'from b');
    const targetLevel = { strategy: { mode: 'fallback' }, targets: [{ provider: '@a', on_status_codes: [503] }, { provider: '@b' }] };
    mocks.a.enqueue({ status: 500, body: { error: { message: 'boom' } } });
    assert.ok((await withConfig(targetLevel).chat.completions.create(CHAT).catch((e: unknown) => e)) instanceof OpenAI.InternalServerError);
  });

  test('when every target fails, the last answer is returned (normalised)', async () => {
    mocks.a.enqueue({ status: 500, body: { error: { message: 'a down' } } });
    mocks.b.enqueue({ status: 503, body: { error: { message: 'b down' } } });
    const error = await withConfig('fb').chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 503);
    assert.match(error.message, /b down/);
  });

  test("the gateway's own validation errors never fall back; a target that cannot be resolved is skipped", async () => {
    // An unknown virtual key is the target's fault, not the request's: the next target answers.
    const config = { strategy: { mode: 'fallback' }, targets: [{ virtual_key: 'vk-unknown' }, { provider: '@b' }] };
    assert.equal((await ask(withConfig(config))).text, 'from b');
    assert.equal(counts(), 'a=0 b=1 c=0');
    const onlyUnknown = { strategy: { mode: 'fallback' }, targets: [{ virtual_key: 'vk-unknown' }, { virtual_key: 'vk-unknown-too' }] };
    assert.ok((await withConfig(onlyUnknown).chat.completions.create(CHAT).catch((e: unknown) => e)) instanceof OpenAI.NotFoundError);
    const invalidBody = await withConfig('fb').chat.completions.create({ model: 'm', messages: [] }).catch((e: unknown) => e);
    assert.ok(invalidBody instanceof OpenAI.BadRequestError);
    assert.equal(counts(), 'a=0 b=1 c=0');
  });

  test('fallbacks are counted in /metrics', async () => {
    mocks.a.enqueue({ status: 500, body: { error: { message: 'boom' } } });
    await ask(withConfig('fb'));
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(metrics, /aigateway_fallbacks_total\{config="fb"\} [1-9]/);
  });
});

describe('loadbalance', () => {
  test('weights shape the traffic; weight 0 is never picked', async () => {
    const config = { strategy: { mode: 'loadbalance' }, targets: [{ provider: '@a', weight: 3 }, { provider: '@b' }, { provider: '@c', weight: 0 }] };
    const client = withConfig(config);
    for (let i = 0; i < 200; i++) await ask(client);
    const a = mocks.a.requests.length;
    assert.equal(mocks.c.requests.length, 0, 'weight 0 never picked');
    assert.equal(a + mocks.b.requests.length, 200);
    assert.ok(Math.abs(a / 200 - 0.75) < 0.1, `expected ~75% on a, got ${counts()}`);
  });

  test('all weights 0 → 503 with a clear message, at once', async () => {
    const config = { strategy: { mode: 'loadbalance' }, targets: [{ provider: '@a', weight: 0 }, { provider: '@b', weight: 0 }] };
    const error = await withConfig(config).chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 503);
    assert.match(error.message, /weight 0/);
  });
});

describe('conditional', () => {
  test('first matching condition wins; default otherwise; nesting to any depth', async () => {
    const pro = await ask(withConfig('nested', { 'x-gateway-metadata': JSON.stringify({ plan: 'pro' }) }), { ...CHAT, model: 'cheap-1' });
    assert.equal(pro.text, 'from a');
    assert.equal(pro.index, 'config.targets[0].targets[0].targets[0]');

    const cheap = await ask(withConfig('nested'), { ...CHAT, model: 'cheap-1' });
    assert.equal(cheap.text, 'from b');
    assert.equal(cheap.index, 'config.targets[1]');

    const rest = await ask(withConfig('nested'));
    assert.equal(rest.text, 'from c');

    mocks.a.enqueue({ status: 502, body: 'bad gateway' });
    const fellBack = await ask(withConfig('nested', { 'x-gateway-metadata': JSON.stringify({ plan: 'pro' }) }));
    assert.equal(fellBack.text, 'from b', 'fallback inside loadbalance inside conditional');
    assert.equal(fellBack.index, 'config.targets[0].targets[0].targets[1]');
  });

  test('an unknown target name is a validation error (400 with its path)', async () => {
    const config = { strategy: { mode: 'conditional', conditions: [{ query: { 'metadata.x': 1 }, then: 'nope' }], default: 'a' }, targets: [{ name: 'a', provider: '@a' }] };
    const error = await withConfig(config).chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.match(error.message, /strategy\.conditions\[0\]\.then/);
  });
});

describe('per-target behaviour', () => {
  test('override_params merge into the body (child wins) and reach the upstream', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      override_params: { temperature: 0.3, model: 'parent-model' },
      targets: [{ provider: '@a', override_params: { model: 'child-model' } }],
    };
    await ask(withConfig(config));
    const sent = mocks.a.requests[0]?.json as Record<string, unknown>;
    assert.equal(sent['model'], 'child-model');
    assert.equal(sent['temperature'], 0.3);
    assert.deepEqual(sent['messages'], CHAT.messages);
  });

  test('custom_host is inherited by a child that names a provider with credentials', async () => {
    const config = { strategy: { mode: 'fallback' }, custom_host: mocks.c.url, targets: [{ provider: 'openai', api_key: 'sk-x' }] };
    assert.equal((await ask(withConfig(config))).text, 'from c');
  });

  test('forward_headers: from the header and the config, only the named ones, case-insensitive', async () => {
    const config = { provider: '@a', forward_headers: ['X-From-Config'] };
    await ask(
      withConfig(config, {
        'x-gateway-forward-headers': JSON.stringify(['x-tenant']),
        'X-Tenant': 't-1',
        'x-from-config': 'c-1',
        'x-not-named': 'nope',
      }),
    );
    const headers = mocks.a.requests[0]?.headers ?? {};
    assert.equal(headers['x-tenant'], 't-1');
    assert.equal(headers['x-from-config'], 'c-1');
    assert.equal(headers['x-not-named'], undefined);
    assert.equal(headers['authorization'], 'Bearer sk-a', 'forwarded headers never replace the provider credential');
  });

  test('the gateway API key is never forwarded, even when named', async () => {
    await ask(withConfig({ provider: '@a' }, { 'x-gateway-forward-headers': 'x-gateway-api-key, x-ok', 'x-ok': '1' }));
    const headers = mocks.a.requests[0]?.headers ?? {};
    assert.equal(headers['x-gateway-api-key'], undefined);
    assert.equal(headers['x-ok'], '1');
  });

  test('bad x-gateway-forward-headers and x-gateway-request-timeout → 400 naming the header', async () => {
    for (const [name, value] of [
      ['x-gateway-forward-headers', '[1,2]'],
      ['x-gateway-request-timeout', 'soon'],
      ['x-gateway-request-timeout', '-5'],
    ] as const) {
      const error = await withConfig('fb', { [name]: value }).chat.completions.create(CHAT).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.BadRequestError, `${name}: ${value}`);
      assert.equal((error.error as { param?: string }).param, name);
    }
  });
});
