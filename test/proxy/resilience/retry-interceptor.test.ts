import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { composeAttempt, FIRST_ATTEMPT, type Attempt } from '../../../proxy/resilience/attempt-chain.ts';
import { nextRetryWait, retryInterceptor, type RetryOptions } from '../../../proxy/resilience/retry-interceptor.ts';
import type { AttemptResult } from '../../../proxy/upstream/call-target.ts';

// The waits the retry interceptor asks for, read from its injected sleep: no clock involved.
function answer(status: number, headers: Record<string, string> = {}): AttemptResult {
  return { kind: 'response', response: { statusCode: status, headers, body: undefined }, target: {}, requestBody: {}, timeoutMs: undefined, plain: undefined } as unknown as AttemptResult;
}

function harness(answers: AttemptResult[], options: Partial<RetryOptions> & { settings: RetryOptions['settings'] }) {
  const waits: number[] = [];
  let sends = 0;
  const send: Attempt = async () => answers[sends++] ?? answer(200);
  const attempt = composeAttempt(
    send,
    retryInterceptor({
      signal: new AbortController().signal,
      deadline: Number.POSITIVE_INFINITY,
      now: () => 1_000_000,
      random: () => 0.5,
      baseDelayMs: 100,
      sleep: async (ms) => {
        waits.push(ms);
      },
      discard: () => undefined,
      onRetry: () => undefined,
      ...options,
    }),
  );
  return { waits, sends: () => sends, run: () => attempt(FIRST_ATTEMPT) };
}

const statusOf = (outcome: Awaited<ReturnType<Attempt>>): number | string =>
  outcome.kind === 'response' ? outcome.response.statusCode : outcome.kind;

describe('retry interceptor', () => {
  test('use_retry_after_headers waits what the provider asks: retry-after-ms, then retry-after in seconds', async () => {
    const ms = harness([answer(429, { 'retry-after-ms': '300' })], { settings: { attempts: 1, use_retry_after_headers: true } });
    assert.equal(statusOf(await ms.run()), 200);
    assert.deepEqual(ms.waits, [300]);
    const seconds = harness([answer(429, { 'retry-after': '1' })], { settings: { attempts: 1, use_retry_after_headers: true } });
    assert.equal(statusOf(await seconds.run()), 200);
    assert.deepEqual(seconds.waits, [1_000]);
  });

  test('without use_retry_after_headers the backoff applies, growing per retry', async () => {
    const backoff = harness([answer(429, { 'retry-after': '30' }), answer(500), answer(502)], { settings: { attempts: 3 } });
    assert.equal(statusOf(await backoff.run()), 200);
    assert.equal(backoff.sends(), 4);
    assert.equal(backoff.waits.length, 3);
    assert.ok(backoff.waits.every((wait, index) => index === 0 || wait > (backoff.waits[index - 1] as number)), `growing: ${backoff.waits.join(', ')}`);
    assert.ok(!backoff.waits.includes(30_000));
  });

  test('a retry-after beyond the request budget is not waited for: the 429 stands at once', async () => {
    const budget = harness([answer(429, { 'retry-after': '30' })], {
      settings: { attempts: 2, use_retry_after_headers: true },
      deadline: 1_000_000 + 2_000,
    });
    assert.equal(statusOf(await budget.run()), 429);
    assert.deepEqual(budget.waits, []);
    assert.equal(budget.sends(), 1);
  });

  // The walk's one-frame retry loop (routing/leaf-call.ts) decides with this same function.
  test('nextRetryWait: a wait only for a failed, retryable answer with retries left, a live client and time in the budget', () => {
    const live = new AbortController().signal;
    const gone = AbortSignal.abort();
    const wait = (result: AttemptResult, retry: number, settings: RetryOptions['settings'], signal = live, deadline = Number.POSITIVE_INFINITY) =>
      nextRetryWait(result, retry, settings, signal, deadline, () => 1_000_000, () => 0.5, 100);
    assert.equal(wait(answer(500), 0, { attempts: 2 }), 50);
    assert.equal(wait(answer(500), 1, { attempts: 2 }), 100);
    assert.equal(wait(answer(500), 2, { attempts: 2 }), undefined, 'retries used up');
    assert.equal(wait(answer(200), 0, { attempts: 2 }), undefined, 'a success stands');
    assert.equal(wait(answer(400), 0, { attempts: 2 }), undefined, 'not a retried status');
    assert.equal(wait(answer(500), 0, { attempts: 2, on_status_codes: [429] }), undefined, 'on_status_codes replaces the default set');
    assert.equal(wait(answer(429), 0, { attempts: 2, on_status_codes: [429] }), 50);
    assert.equal(wait(answer(500), 0, { attempts: 2 }, gone), undefined, 'the client went away');
    assert.equal(wait(answer(500), 0, { attempts: 2 }, live, 1_000_000 + 50), undefined, 'past the budget');
    assert.equal(wait(answer(500), 0, { attempts: 0 }), undefined, 'no retries configured');
  });
});
