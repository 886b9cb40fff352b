// Retries, request timeouts and circuit breakers end to end, with a programmable mock.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };
const FAIL = (status: number, headers?: Record<string, string>) => ({ status, body: { error: { message: `failed ${status}` } }, headers });

let a: MockOpenAI;
let b: MockOpenAI;

before(async () => {
  a = await startMockOpenAI({ replyText: 'from a' });
  b = await startMockOpenAI({ replyText: 'from b' });
});
after(async () => {
  await a.close();
  await b.close();
});
beforeEach(() => {
  a.reset();
  b.reset();
});

function providers() {
  return [
    { slug: 'a', provider: 'openai', apiKey: 'sk-a', customHost: a.url },
    { slug: 'b', provider: 'openai', apiKey: 'sk-b', customHost: b.url },
  ];
}

async function metricsText(harness: Harness): Promise<string> {
  return (await fetch(`${harness.gateway.origin}/metrics`)).text();
}

describe('retries and timeouts', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: baseState({ providers: providers() }), retryBaseDelayMs: 1 });
  });
  after(async () => harness.close());

  const client = (config: unknown, extra: Record<string, string> = {}) =>
    harness.client({ 'x-gateway-config': JSON.stringify(config), ...extra });

  test('retries up to `attempts` on the default statuses, then succeeds; the count is reported', async () => {
    a.enqueue(FAIL(500), FAIL(502));
    const { data, response } = await client({ provider: '@a', retry: { attempts: 2 } }).chat.completions.create(CHAT).withResponse();
    assert.equal(data.choices[0]?.message.content, 'from a');
    assert.equal(response.headers.get('x-gateway-retry-attempt-count'), '2');
    assert.equal(a.requests.length, 3);
    assert.match(await metricsText(harness), /aigateway_retries_total\{target="inline:openai"\} [2-9]/);
  });

  test('attempts exhausted → the last answer; non-retryable statuses are not retried', async () => {
    a.enqueue(FAIL(503), FAIL(503), FAIL(503));
    const error = await client({ provider: '@a', retry: { attempts: 1 } }).chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 503);
    assert.equal(a.requests.length, 2);
    a.reset();
    a.enqueue(FAIL(400));
    const bad = await client({ provider: '@a', retry: { attempts: 3 } }).chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(bad instanceof OpenAI.BadRequestError);
    assert.equal(a.requests.length, 1);
  });

  test('on_status_codes replaces the default set', async () => {
    a.enqueue(FAIL(500));
    const error = await client({ provider: '@a', retry: { attempts: 2, on_status_codes: [429] } }).chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.InternalServerError);
    assert.equal(a.requests.length, 1);
    a.reset();
    a.enqueue(FAIL(429));
    const ok = await client({ provider: '@a', retry: { attempts: 2, on_status_codes: [429] } }).chat.completions.create(CHAT);
    assert.equal(ok.choices[0]?.message.content, 'from a');
  });

  test('retries of a target finish before fallback moves on', async () => {
    a.enqueue(FAIL(500), FAIL(500), FAIL(500));
    const config = { strategy: { mode: 'fallback' }, retry: { attempts: 2 }, targets: [{ provider: '@a' }, { provider: '@b' }] };
    const { data, response } = await client(config).chat.completions.create(CHAT).withResponse();
    assert.equal(data.choices[0]?.message.content, 'from b');
    assert.equal(a.requests.length, 3);
    assert.equal(b.requests.length, 1);
    assert.equal(response.headers.get('x-gateway-retry-attempt-count'), '2');
  });

  // How long each wait is: test/proxy/resilience/retry-interceptor.test.ts (its sleep is injected).
  test('use_retry_after_headers retries after the provider\'s retry-after-ms and retry-after', async () => {
    a.enqueue(FAIL(429, { 'retry-after-ms': '30' }));
    const first = await client({ provider: '@a', retry: { attempts: 1, use_retry_after_headers: true } }).chat.completions.create(CHAT).withResponse();
    assert.equal(first.data.choices[0]?.message.content, 'from a');
    assert.equal(first.response.headers.get('x-gateway-retry-attempt-count'), '1');
    a.enqueue(FAIL(429, { 'retry-after': '0' }));
    const second = await client({ provider: '@a', retry: { attempts: 1, use_retry_after_headers: true } }).chat.completions.create(CHAT).withResponse();
    assert.equal(second.response.headers.get('x-gateway-retry-attempt-count'), '1');
    assert.equal(a.requests.length, 4);
  });

  test('a retry-after beyond the request budget is not waited for: the 429 comes back at once', { timeout: 15_000 }, async () => {
    a.enqueue(FAIL(429, { 'retry-after': '30' }));
    // Hang guard: waiting out the 30 s would exceed the test's timeout.
    const error = await client({ provider: '@a', retry: { attempts: 2, use_retry_after_headers: true } }, { 'x-gateway-request-timeout': '2000' })
      .chat.completions.create(CHAT)
      .catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.RateLimitError);
    assert.equal(a.requests.length, 1);
  });

  test('request_timeout from the config → 408 timeout_error, upstream aborted', async () => {
    // The upstream holds its answer until the test is done: only the timeout can end the request.
    let release: () => void = () => undefined;
    a.enqueue({ until: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const error = await client({ provider: '@a', request_timeout: 150 }).chat.completions.create(CHAT).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 408);
      assert.equal(error.type, 'timeout_error');
      await a.waitForAborted(1);
    } finally {
      release();
    }
  });

  test('x-gateway-request-timeout wins over the config', async () => {
    let release: () => void = () => undefined;
    a.enqueue({ until: new Promise<void>((resolve) => (release = resolve)) });
    const error = await client({ provider: '@a', request_timeout: 60_000 }, { 'x-gateway-request-timeout': '150' })
      .chat.completions.create(CHAT)
      .catch((e: unknown) => e)
      .finally(() => release());
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 408);
  });

  test('a stream that stalls mid-way ends with a timeout error event; the upstream is aborted', async () => {
    a.enqueue({ stall: 'mid-stream' });
    const stream = await client({ provider: '@a', request_timeout: 200 }).chat.completions.create({ ...CHAT, stream: true });
    let chunks = 0;
    const error = await (async () => {
      for await (const _chunk of stream) chunks++;
    })().catch((e: unknown) => e);
    assert.ok(chunks >= 1, 'the first chunk arrived before the stall');
    assert.ok(error instanceof OpenAI.APIError, `got ${String(error)}`);
    assert.match(error.message, /stalled/);
    await a.waitForAborted(1, 3000);
  });

  test('a 200 stream that ends before its first byte is a failure: the walk falls back, the client gets the next target\'s stream', async () => {
    a.enqueue({ emptyAfterHeaders: true });
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: '@a' }, { provider: '@b' }] };
    const { data: stream, response } = await client(config).chat.completions.create({ ...CHAT, stream: true }).withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'from b');
    assert.equal(response.headers.get('x-gateway-last-used-option-index'), 'config.targets[1]');
    assert.equal(a.requests.length, 1);
    assert.equal(b.requests.length, 1);
  });
});

describe('circuit breakers', () => {
  let harness: Harness;
  let clock = 1_000_000;
  const CB = { failure_threshold: 2, cooldown_interval: 30_000 };

  before(async () => {
    harness = await startHarness({
      state: baseState({
        providers: providers(),
        configs: [
          { id: 'guarded', config: { strategy: { mode: 'fallback' }, targets: [{ name: 'primary', provider: '@a', cb_config: CB }, { name: 'backup', provider: '@b' }] } },
          { id: 'alone', config: { strategy: { mode: 'loadbalance' }, cb_config: CB, targets: [{ name: 'only-a', provider: '@a' }, { name: 'only-b', provider: '@b' }] } },
        ],
      }),
      now: () => clock,
    });
  });
  after(async () => harness.close());

  const guarded = () => harness.client({ 'x-gateway-config': 'guarded' });

  test('opens at the threshold; while open the target gets no traffic; half-open trial after the cooldown closes it', async () => {
    a.enqueue(FAIL(500), FAIL(500));
    for (let i = 0; i < 2; i++) assert.equal((await guarded().chat.completions.create(CHAT)).choices[0]?.message.content, 'from b');
    assert.equal(a.requests.length, 2);
    assert.match(await metricsText(harness), /aigateway_circuit_state\{target="guarded:primary"\} 2/);

    for (let i = 0; i < 5; i++) await guarded().chat.completions.create(CHAT);
    assert.equal(a.requests.length, 2, 'no request reached the open target');

    clock += 29_999;
    await guarded().chat.completions.create(CHAT);
    assert.equal(a.requests.length, 2, 'still open just before the cooldown ends');

    clock += 1;
    const trial = await guarded().chat.completions.create(CHAT);
    assert.equal(trial.choices[0]?.message.content, 'from a', 'the half-open trial reached the target');
    const metrics = await metricsText(harness);
    assert.match(metrics, /aigateway_circuit_state\{target="guarded:primary"\} 0/);
    assert.match(metrics, /aigateway_circuit_transitions_total\{target="guarded:primary",from="closed",to="open"\} 1/);
    assert.match(metrics, /aigateway_circuit_transitions_total\{target="guarded:primary",from="open",to="half-open"\} 1/);
    assert.match(metrics, /aigateway_circuit_transitions_total\{target="guarded:primary",from="half-open",to="closed"\} 1/);
  });

  test('a failed trial reopens it', async () => {
    a.enqueue(FAIL(500), FAIL(500));
    await guarded().chat.completions.create(CHAT);
    await guarded().chat.completions.create(CHAT);
    clock += 30_000;
    a.enqueue(FAIL(503));
    await guarded().chat.completions.create(CHAT);
    assert.match(await metricsText(harness), /aigateway_circuit_state\{target="guarded:primary"\} 2/);
    const before = a.requests.length;
    await guarded().chat.completions.create(CHAT);
    assert.equal(a.requests.length, before);
    clock += 30_000;
    await guarded().chat.completions.create(CHAT); // closes again for the next tests
  });

  test('every candidate open → 503 naming the open targets; state survives a config reload', async () => {
    const alone = () => harness.client({ 'x-gateway-config': 'alone' });
    a.enqueue(...Array.from({ length: 10 }, () => FAIL(500)));
    b.enqueue(...Array.from({ length: 10 }, () => FAIL(500)));
    for (let i = 0; i < 4; i++) await alone().chat.completions.create(CHAT).catch(() => undefined);
    const error = await alone().chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 503);
    assert.match(error.message, /alone:only-a/);
    assert.match(error.message, /alone:only-b/);

    const hashBefore = harness.gateway.server.currentState().hash;
    const state = baseState({
      providers: providers(),
      configs: [{ id: 'alone', config: { strategy: { mode: 'loadbalance' }, cb_config: CB, targets: [{ name: 'only-a', provider: '@a' }, { name: 'only-b', provider: '@b' }] } }],
    });
    (state['apiKeys'] as unknown[]).push({ id: 'extra', key: 'gw-extra-key-123-0123456789abcde' });
    await harness.writeState(state);
    await eventually(() => harness.gateway.server.currentState().hash !== hashBefore, 'the reload', { timeoutMs: 10_000 });
    const stillOpen = await alone().chat.completions.create(CHAT).catch((e: unknown) => e);
    assert.ok(stillOpen instanceof OpenAI.APIError);
    assert.equal(stillOpen.status, 503, 'breaker state survived the reload');
  });
});
