// Budget periods on the calendar of the policy's time zone: days, weeks from Monday and
// months start at local midnight there (DST included), never is one period.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { periodOf } from '../../proxy/budgets/budget-period.ts';
import { MemoryBudgetStore } from '../../proxy/budgets/budget-store.ts';

const at = (iso: string): number => Date.parse(iso);

describe('periodOf', () => {
  test('a day starts at local midnight in the policy time zone', () => {
    const berlin = { periodic_reset: 'daily' as const, time_zone: 'Europe/Berlin' };
    assert.equal(periodOf(berlin, at('2026-03-28T22:59:59Z')), '2026-03-28');
    assert.equal(periodOf(berlin, at('2026-03-28T23:00:00Z')), '2026-03-29');
    // The DST change (Berlin goes to UTC+2 on 29 March 2026): midnight is 22:00 UTC.
    assert.equal(periodOf(berlin, at('2026-03-29T21:59:59Z')), '2026-03-29');
    assert.equal(periodOf(berlin, at('2026-03-29T22:00:00Z')), '2026-03-30');
    assert.equal(periodOf({ periodic_reset: 'daily', time_zone: 'UTC' }, at('2026-03-28T23:00:00Z')), '2026-03-28');
  });

  test('a week starts on Monday; a month on the 1st; never is one period', () => {
    const la = { periodic_reset: 'weekly' as const, time_zone: 'America/Los_Angeles' };
    // Monday 23 Nov 2026, 00:00 in Los Angeles is 08:00 UTC.
    assert.equal(periodOf(la, at('2026-11-23T07:59:59Z')), 'w2026-11-16');
    assert.equal(periodOf(la, at('2026-11-23T08:00:00Z')), 'w2026-11-23');
    assert.equal(periodOf(la, at('2026-11-29T23:00:00Z')), 'w2026-11-23');
    // A week across a year end.
    assert.equal(periodOf({ periodic_reset: 'weekly', time_zone: 'UTC' }, at('2027-01-01T12:00:00Z')), 'w2026-12-28');
    const tokyo = { periodic_reset: 'monthly' as const, time_zone: 'Asia/Tokyo' };
    assert.equal(periodOf(tokyo, at('2026-11-30T14:59:59Z')), 'm2026-11');
    assert.equal(periodOf(tokyo, at('2026-11-30T15:00:00Z')), 'm2026-12');
    assert.equal(periodOf({ periodic_reset: 'never', time_zone: 'UTC' }, at('2030-01-01T00:00:00Z')), 'all');
  });
});

describe('MemoryBudgetStore', () => {
  test('reservations are all-or-nothing across counters; settlement refunds what was recorded under the token', async () => {
    const store = new MemoryBudgetStore();
    const a = { key: 'a', limit: 100, amount: 60, ttlSeconds: 0 };
    const b = { key: 'b', limit: 50, amount: 60, ttlSeconds: 0 };
    const refused = await store.reserve([a, b], 't1');
    assert.deepEqual(refused, { admitted: false, index: 1, used: 0 });
    assert.deepEqual(await store.read(['a', 'b']), [{ used: 0, spent: 0 }, { used: 0, spent: 0 }]);
    assert.deepEqual(await store.reserve([a, { ...b, amount: 40 }], 't2'), { admitted: true, used: [60, 40] });
    const settled = await store.settle([{ key: 'a', actual: 10, ttlSeconds: 0, alertAt: 5 }, { key: 'b', actual: 10, ttlSeconds: 0, alertAt: -1 }], 't2');
    assert.deepEqual(settled, [{ used: 10, spent: 10, crossed: true }, { used: 10, spent: 10, crossed: false }]);
    // A cancelled token refunds nothing twice; an unknown one nothing at all.
    await store.reserve([a], 't3');
    await store.cancel(['a'], 't3');
    await store.cancel(['a'], 't3');
    assert.deepEqual(await store.read(['a']), [{ used: 10, spent: 10 }]);
  });
});
