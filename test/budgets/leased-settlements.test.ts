// Settlements of leased requests summed per counter into one script call, each request still
// told its own spend, and the alert crossing given to the one request whose cost crossed it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeasedSettlements } from '../../proxy/budgets/leased-settlements.ts';

describe('LeasedSettlements', () => {
  test('one write for every request and release per counter; each request gets its own running spend; the crossing goes to one', async () => {
    const sums = new LeasedSettlements();
    const first = sums.add('a', 30, 50, 60, 100);
    const second = sums.add('a', 40, 50, 60, 100);
    const third = sums.add('a', 50, 50, 60, 100);
    sums.release('a', 200, 60);
    const other = sums.add('b', 5, 10, 0, -1);
    assert.equal(sums.waiting, 4);
    const write = sums.drain('lease-x');
    assert.ok(write !== undefined);
    assert.equal(sums.waiting, 0);
    assert.equal(sums.drain('lease-x'), undefined, 'drained');
    assert.deepEqual(write.args, ['2', 'a', 'b', '120', '350', '60', '100', '5', '10', '0', '-1', 'lease-x']);
    // Redis: a spent 20 → 140 (crossed 100), used 500 after; b spent 5.
    write.resolve([500, 140, 1, 7, 5, 0]);
    assert.deepEqual(await Promise.all([first, second, third, other]), [
      { used: 500, spent: 50, crossed: false },
      { used: 500, spent: 90, crossed: false },
      { used: 500, spent: 140, crossed: true },
      { used: 7, spent: 5, crossed: false },
    ]);
  });

  test('no crossing unless the script marked it (another write or replica crossed first)', async () => {
    const sums = new LeasedSettlements();
    const one = sums.add('a', 60, 60, 0, 100);
    const two = sums.add('a', 60, 60, 0, 100);
    sums.drain('t')?.resolve([120, 120, 0]);
    assert.deepEqual((await Promise.all([one, two])).map((outcome) => outcome.crossed), [false, false]);
  });

  test('a failed write fails every request in it', async () => {
    const sums = new LeasedSettlements();
    const one = sums.add('a', 1, 1, 0, -1);
    const two = sums.add('b', 1, 1, 0, -1);
    sums.drain('t')?.reject(new Error('down'));
    await assert.rejects(one, /down/);
    await assert.rejects(two, /down/);
  });
});
