import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { composeAttempt, FIRST_ATTEMPT, type Attempt, type AttemptInterceptor } from '../../../proxy/resilience/attempt-chain.ts';
import { timeoutInterceptor } from '../../../proxy/resilience/timeout-interceptor.ts';

// The interceptors wrap one attempt like undici's wrap dispatch: first listed is outermost.
describe('attempt chain', () => {
  const tagging =
    (tag: string, trail: string[]): AttemptInterceptor =>
    (next) =>
    async (context) => {
      trail.push(`>${tag}`);
      const outcome = await next(context);
      trail.push(`<${tag}`);
      return outcome;
    };

  test('interceptors run outermost first, and an absent one is skipped', async () => {
    const trail: string[] = [];
    const send: Attempt = async () => {
      trail.push('send');
      return { kind: 'skipped', reason: 'out-of-time' };
    };
    await composeAttempt(send, tagging('retry', trail), undefined, tagging('timeout', trail))(FIRST_ATTEMPT);
    assert.deepEqual(trail, ['>retry', '>timeout', 'send', '<timeout', '<retry']);
  });

  test('the timeout interceptor bounds the attempt by what is left of the budget, and skips when none is', async () => {
    let now = 1_000;
    const seen: Array<number | undefined> = [];
    const send: Attempt = async (context) => {
      seen.push(context.timeoutMs);
      return { kind: 'skipped', reason: 'circuit-open' };
    };
    const attempt = composeAttempt(send, timeoutInterceptor({ perAttemptMs: 500, deadline: 1_200, now: () => now }));
    await attempt(FIRST_ATTEMPT);
    assert.deepEqual(seen, [200]);
    now = 1_200;
    assert.deepEqual(await attempt(FIRST_ATTEMPT), { kind: 'skipped', reason: 'out-of-time' });
    assert.deepEqual(seen, [200]);
    const unbounded = composeAttempt(send, timeoutInterceptor({ perAttemptMs: undefined, deadline: Number.POSITIVE_INFINITY, now: () => now }));
    await unbounded(FIRST_ATTEMPT);
    assert.deepEqual(seen, [200, undefined]);
  });
});
