// The replica's lease book (no Redis): what it admits locally, what it gives back, when it asks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BudgetLeases } from '../../proxy/budgets/budget-leases.ts';

const item = (amount: number, limit = 1_000_000, key = 'k') => ({ key, limit, amount, ttlSeconds: 60 });

/** A book holding a lease of `granted` on key k (after one request reserved in Redis, used `used`). */
function leased(granted: number, used = 100, settings = {}): BudgetLeases {
  const leases = new BudgetLeases(settings);
  const [ask] = leases.asks([item(100)], [used], 0);
  assert.ok(ask !== undefined);
  leases.granted(ask, granted, used + granted, 0);
  return leases;
}

describe('BudgetLeases', () => {
  test('nothing is admitted locally before a lease; the first ask is for requests × the reservation, at least minRequests ×', () => {
    const leases = new BudgetLeases();
    assert.equal(leases.take([item(100)], 't1', 0), undefined);
    assert.deepEqual(leases.asks([item(100)], [100], 0), [{ key: 'k', limit: 1_000_000, want: 3_200, minimum: 200, ttlSeconds: 60 }]);
    // One ask at a time.
    assert.deepEqual(leases.asks([item(100)], [100], 0), []);
  });

  test('a lease admits while it covers, reports the counter\'s estimated use, then misses', () => {
    const leases = leased(300);
    // Redis said used 400 (100 reserved + the 300 lease); 300 of it is not given to a request yet.
    assert.deepEqual(leases.take([item(100)], 't1', 1), [200]);
    assert.deepEqual(leases.take([item(150)], 't2', 1), [350]);
    assert.equal(leases.take([item(100)], 't3', 1), undefined, '50 left');
    assert.deepEqual(leases.settled('t1'), [item(100)]);
    assert.equal(leases.settled('t1'), undefined, 'once');
    assert.equal(leases.settled('never-leased'), undefined);
  });

  test('all or nothing across counters; a zero amount and a changed limit go to Redis', () => {
    const leases = leased(300);
    assert.equal(leases.take([item(100), item(100, 1_000_000, 'other')], 't1', 1), undefined);
    assert.equal(leases.take([item(0)], 't2', 1), undefined);
    assert.equal(leases.take([item(100, 999_999)], 't3', 1), undefined);
    assert.deepEqual(leases.take([item(100)], 't4', 1), [200], 'the lease was untouched by the misses');
  });

  test('a miss gives the unused lease back before the request reserves in Redis', () => {
    const leases = leased(300);
    leases.take([item(250)], 't1', 1);
    assert.deepEqual(leases.releaseFor([item(100)]), [{ key: 'k', amount: 50, ttlSeconds: 60 }]);
    assert.deepEqual(leases.releaseFor([item(100)]), [], 'nothing left to give');
    assert.equal(leases.take([item(10)], 't2', 1), undefined);
  });

  test('no ask when the counter cannot grant the minimum; a refused or failed ask waits retryMs', () => {
    const leases = new BudgetLeases({ divisor: 16, minRequests: 2, retryMs: 1_000 });
    // (limit − used) / 16 = 150 < 2 × 100.
    assert.deepEqual(leases.asks([item(100, 2_500)], [100], 0), []);
    const [ask] = leases.asks([item(100)], [100], 0);
    assert.ok(ask !== undefined);
    leases.granted(ask, 0, 100, 10);
    assert.deepEqual(leases.asks([item(100)], [100], 500), []);
    const [again] = leases.asks([item(100)], [100], 1_010);
    assert.ok(again !== undefined);
    leases.failed(again, 1_020);
    assert.deepEqual(leases.asks([item(100)], [100], 1_500), []);
    assert.equal(leases.asks([item(100)], [100], 2_020).length, 1);
  });

  test('a lease running low asks for more; one still full does not', () => {
    const leases = leased(3_200);
    assert.deepEqual(leases.asks([item(100)], undefined, 1), [], 'full');
    for (let i = 0; i < 17; i++) leases.take([item(100)], `t${i}`, 1);
    assert.equal(leases.asks([item(100)], undefined, 1).length, 1, '1,500 left: below half');
  });

  test('an idle lease goes back after idleMs; an empty idle counter is forgotten after ten times that', () => {
    const leases = leased(300, 100, { idleMs: 1_000 });
    leases.take([item(100)], 't1', 100);
    assert.deepEqual(leases.idle(1_099), []);
    assert.deepEqual(leases.idle(1_100), [{ key: 'k', amount: 200, ttlSeconds: 60 }]);
    assert.deepEqual(leases.size, { counters: 1, open: 1 });
    assert.deepEqual(leases.idle(10_099), []);
    leases.idle(10_100);
    assert.deepEqual(leases.size, { counters: 0, open: 1 }, 'the open request is still settled from its lease');
    assert.deepEqual(leases.settled('t1'), [item(100)]);
  });

  test('bounded: beyond maxOpen requests go to Redis; beyond maxCounters no new lease is asked', () => {
    const leases = leased(3_200, 100, { maxOpen: 2, maxCounters: 1 });
    assert.ok(leases.take([item(100)], 't1', 1));
    assert.ok(leases.take([item(100)], 't2', 1));
    assert.equal(leases.take([item(100)], 't3', 1), undefined);
    assert.deepEqual(leases.asks([item(100, 1_000_000, 'second')], [100], 1), []);
    assert.deepEqual(leases.releaseAll(), [{ key: 'k', amount: 3_000, ttlSeconds: 60 }]);
  });
});
