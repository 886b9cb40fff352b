// The behaviour every RateLimitCounterStore must show; each implementation's test file
// runs it. Time moves only through the `now` argument, from a start aligned to a day so
// that it is also the start of a minute and an hour window.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CounterDecision, RateLimitCounterStore, WindowSpec } from '../../../proxy/ratelimit/counter-store.ts';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = 20_000 * DAY;

/** Registers the shared counter-store tests under `name`; `create` gives a fresh, empty-keyed store. */
export function counterStoreSuite(name: string, create: () => Promise<RateLimitCounterStore>): void {
  // Keys are unique per test, so stores sharing one Redis cannot see each other's counts.
  let keys = 0;
  const spec = (limit: number, windowMs = MINUTE): WindowSpec => ({ key: `rl:suite:${++keys}`, windowMs, limit });

  async function withStore(run: (store: RateLimitCounterStore) => Promise<void>): Promise<void> {
    const store = await create();
    try {
      await run(store);
    } finally {
      await store.close();
    }
  }

  function assertDecision(actual: CounterDecision, expected: Partial<CounterDecision>): void {
    const picked = Object.fromEntries(Object.keys(expected).map((k) => [k, actual[k as keyof CounterDecision]]));
    assert.deepEqual(picked, expected);
  }

  describe(`${name} counter store`, () => {
    test('admits up to the limit, then refuses', () =>
      withStore(async (store) => {
        const s = spec(3);
        for (let i = 1; i <= 3; i++) {
          assertDecision(await store.consume(s, 1, T0 + i), { allowed: true, limit: 3, used: i, remaining: 3 - i });
        }
        assertDecision(await store.consume(s, 1, T0 + 4), { allowed: false, limit: 3, used: 3, remaining: 0 });
      }));

    test('a refused consume counts nothing', () =>
      withStore(async (store) => {
        const s = spec(5);
        await store.consume(s, 4, T0);
        assertDecision(await store.consume(s, 2, T0 + 1), { allowed: false, used: 4, remaining: 1 });
        assertDecision(await store.peek(s, T0 + 2), { used: 4 });
        assertDecision(await store.consume(s, 1, T0 + 3), { allowed: true, used: 5, remaining: 0 });
      }));

    test('a cost above 1 is admitted only when it fits whole', () =>
      withStore(async (store) => {
        const s = spec(10);
        assertDecision(await store.consume(s, 7, T0), { allowed: true, used: 7, remaining: 3 });
        assertDecision(await store.consume(s, 4, T0), { allowed: false, used: 7, remaining: 3 });
        assertDecision(await store.consume(s, 3, T0), { allowed: true, used: 10, remaining: 0 });
      }));

    test('peek counts nothing and admits while usage is below the limit', () =>
      withStore(async (store) => {
        const s = spec(2);
        assert.deepEqual(await store.peek(s, T0), { allowed: true, limit: 2, used: 0, remaining: 2, resetMs: 0 });
        assertDecision(await store.peek(s, T0), { used: 0 });
        await store.consume(s, 1, T0);
        assertDecision(await store.peek(s, T0), { allowed: true, used: 1, remaining: 1 });
        await store.consume(s, 1, T0);
        assertDecision(await store.peek(s, T0), { allowed: false, used: 2, remaining: 0 });
      }));

    test('add counts usage after the fact, past the limit too; a negative add refunds', () =>
      withStore(async (store) => {
        const s = spec(10);
        await store.add(s, 8, T0);
        assertDecision(await store.peek(s, T0), { allowed: true, used: 8 });
        await store.add(s, 5, T0);
        assertDecision(await store.peek(s, T0), { allowed: false, used: 13, remaining: 0 });
        await store.add(s, -6, T0);
        assertDecision(await store.peek(s, T0), { allowed: true, used: 7, remaining: 3 });
        await store.add(s, -100, T0);
        assertDecision(await store.peek(s, T0), { used: 0, remaining: 10 });
      }));

    test('a refund after the window rolled over comes off the previous window', () =>
      withStore(async (store) => {
        const s = spec(10);
        await store.consume(s, 6, T0);
        await store.add(s, 1, T0 + MINUTE);
        await store.add(s, -3, T0 + MINUTE);
        // current 1 - 3 → 0, previous 6 - 2 → 4; at the window's start all of it counts.
        assertDecision(await store.peek(s, T0 + MINUTE), { used: 4 });
      }));

    test('usage slides out: fully after two windows, by the weighted formula in between', () =>
      withStore(async (store) => {
        const s = spec(10);
        await store.consume(s, 8, T0 + 5_000);
        // At the next window's start the whole previous window still counts.
        assertDecision(await store.peek(s, T0 + MINUTE), { used: 8, remaining: 2 });
        // A quarter, a third and half-way in: previous * (1 - elapsed / window) + current.
        assertDecision(await store.peek(s, T0 + MINUTE + 15_000), { used: 6 });
        assertDecision(await store.peek(s, T0 + MINUTE + 20_000), { used: 8 * (1 - 20_000 / MINUTE) });
        assertDecision(await store.peek(s, T0 + MINUTE + 30_000), { used: 4, remaining: 6 });
        assertDecision(await store.consume(s, 6, T0 + MINUTE + 30_000), { allowed: true, used: 10 });
        assertDecision(await store.consume(s, 1, T0 + MINUTE + 30_000), { allowed: false });
        const at = T0 + MINUTE + 45_000;
        assertDecision(await store.peek(s, at), { used: 8 * (1 - 45_000 / MINUTE) + 6 });
        // One window on, the 6 is the previous window and the 8 is gone.
        assertDecision(await store.peek(s, T0 + 2 * MINUTE + 40_000), { used: 6 * (1 - 40_000 / MINUTE) });
        // Two windows after the last usage nothing is left.
        assert.deepEqual(await store.peek(s, T0 + 3 * MINUTE), { allowed: true, limit: 10, used: 0, remaining: 10, resetMs: 0 });
      }));

    test('usage has slid out entirely a full window after its own window ended', () =>
      withStore(async (store) => {
        const s = spec(5);
        for (let i = 0; i < 5; i++) await store.consume(s, 1, T0 + i);
        assertDecision(await store.consume(s, 1, T0 + MINUTE - 1), { allowed: false });
        assertDecision(await store.consume(s, 1, T0 + 2 * MINUTE), { allowed: true, used: 1, remaining: 4 });
      }));

    test('resetMs is 0 while there is room, and when full the time until there is', () =>
      withStore(async (store) => {
        const s = spec(3);
        assertDecision(await store.consume(s, 2, T0 + 10_000), { remaining: 1, resetMs: 0 });
        // Full with the current window alone: room comes once, in the next window, the
        // 3 have decayed to 2 — a third of the way in: 50 s + 20 s.
        const full = await store.consume(s, 1, T0 + 10_000);
        assertDecision(full, { remaining: 0, resetMs: 70_000 });
        assertDecision(await store.peek(s, T0 + 10_000 + full.resetMs - 1), { remaining: 0 });
        assertDecision(await store.peek(s, T0 + 10_000 + full.resetMs), { remaining: 1, resetMs: 0 });

        // Full because of the previous window: room once its share has decayed from 10 to 9.
        const t = spec(10);
        await store.consume(t, 10, T0);
        const decision = await store.peek(t, T0 + MINUTE);
        assertDecision(decision, { used: 10, remaining: 0, resetMs: 6_000 });
        assertDecision(await store.peek(t, T0 + MINUTE + 5_999), { remaining: 0 });
        assertDecision(await store.peek(t, T0 + MINUTE + 6_000), { remaining: 1, resetMs: 0 });
      }));

    test('resetMs lands where there is room, whatever the rounding', () =>
      withStore(async (store) => {
        for (const [limit, cost, offset] of [[7, 7, 13_337], [3, 3, 1], [10, 9.5, 59_999], [1, 1, 0]] as const) {
          const s = spec(limit);
          const at = T0 + offset;
          const d = await store.consume(s, cost, at);
          assert.ok(d.resetMs > 0, `limit ${limit}: resetMs ${d.resetMs}`);
          assertDecision(await store.peek(s, at + d.resetMs - 1), { remaining: 0 });
          assert.ok((await store.peek(s, at + d.resetMs)).remaining >= 1, `limit ${limit}: room after resetMs`);
        }
      }));

    test('separate keys are counted separately', () =>
      withStore(async (store) => {
        const a = spec(2);
        const b = spec(2);
        await store.consume(a, 2, T0);
        assertDecision(await store.consume(a, 1, T0), { allowed: false });
        assertDecision(await store.consume(b, 1, T0), { allowed: true, used: 1 });
        assertDecision(await store.peek(a, T0), { used: 2 });
      }));

    test('each window size has its own counter and slides at its own pace', () =>
      withStore(async (store) => {
        const perMinute = spec(2, MINUTE);
        const perHour: WindowSpec = { key: perMinute.key, windowMs: HOUR, limit: 5 };
        const perDay: WindowSpec = { key: perMinute.key, windowMs: DAY, limit: 100 };
        for (const s of [perMinute, perHour, perDay]) await store.consume(s, 2, T0);
        assertDecision(await store.consume(perMinute, 1, T0), { allowed: false });
        assertDecision(await store.consume(perHour, 1, T0), { allowed: true, used: 3 });
        // Two minutes on, the minute counter is empty, the hour and day ones are not.
        assertDecision(await store.peek(perMinute, T0 + 2 * MINUTE), { used: 0 });
        assertDecision(await store.peek(perHour, T0 + 2 * MINUTE), { used: 3 });
        // Half-way through the next hour and the next day, half of each still counts.
        assertDecision(await store.peek(perHour, T0 + HOUR + HOUR / 2), { used: 1.5, remaining: 3 });
        assertDecision(await store.peek(perDay, T0 + DAY + DAY / 4), { used: 1.5 });
        assertDecision(await store.peek(perDay, T0 + 2 * DAY), { used: 0 });
      }));

    test('100 concurrent consumes against a limit of 10 admit exactly 10', () =>
      withStore(async (store) => {
        const s = spec(10);
        const decisions = await Promise.all(Array.from({ length: 100 }, () => store.consume(s, 1, T0)));
        assert.equal(decisions.filter((d) => d.allowed).length, 10);
        assertDecision(await store.peek(s, T0), { used: 10 });
      }));

    test('reserve takes what is left, up to the amount, and refuses once nothing is left', () =>
      withStore(async (store) => {
        const s = spec(50);
        const first = await store.reserve(s, 30, T0);
        assert.equal(first.allowed, true);
        assert.equal(first.reserved, 30);
        const second = await store.reserve(s, 30, T0);
        assert.equal(second.allowed, true);
        assert.equal(second.reserved, 20, 'only the room left is taken');
        const third = await store.reserve(s, 1, T0);
        assert.equal(third.allowed, false);
        assert.equal(third.reserved, 0);
        assertDecision(await store.peek(s, T0), { used: 50 });
        // Settling to real usage gives the unused part back.
        await store.add(s, 12 - 30, T0);
        assertDecision(await store.peek(s, T0), { used: 32 });
        assert.equal((await store.reserve(s, 100, T0)).reserved, 18);
      }));

    test('30 concurrent reservations against a budget of 50 admit only what fits', () =>
      withStore(async (store) => {
        const s = spec(50);
        const decisions = await Promise.all(Array.from({ length: 30 }, () => store.reserve(s, 10, T0)));
        assert.equal(decisions.filter((d) => d.allowed).length, 5);
        assert.equal(decisions.reduce((sum, d) => sum + d.reserved, 0), 50);
        assertDecision(await store.peek(s, T0), { used: 50 });
      }));

    test('invalid specs and amounts are rejected before anything is counted', () =>
      withStore(async (store) => {
        const s = spec(5);
        await assert.rejects(store.consume({ ...s, limit: 0 }, 1, T0), RangeError);
        await assert.rejects(store.consume(s, -1, T0), RangeError);
        await assert.rejects(store.consume(s, Number.NaN, T0), RangeError);
        await assert.rejects(store.add(s, Number.POSITIVE_INFINITY, T0), RangeError);
        await assert.rejects(store.peek({ ...s, windowMs: 0 }, T0), RangeError);
        assertDecision(await store.peek(s, T0), { used: 0 });
      }));
  });
}
