// Leases in the Redis budget store, against the real Redis: once a replica holds a lease its
// requests are admitted with nothing written before the answer, the limit still holds across
// replicas, a replica never refuses for budget its own lease holds, and unused lease goes back
// (idle, on close) so `used` returns to `spent`.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import { eventually } from '../helpers/eventually.ts';
import { admin, PREFIX, recordingProxy, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';

let serial = 0;
const counter = (name: string): string => `{budget}:lease-test:${name}:${process.pid}:${serial++}`;
const reserve = (key: string, limit: number, amount: number) => [{ key, limit, amount, ttlSeconds: 60 }];
const settle = (key: string, actual: number) => [{ key, actual, ttlSeconds: 60, alertAt: -1 }];

/** The counter's fields, with the lease fields summed. */
async function fields(key: string): Promise<{ used: number; spent: number; leased: number; open: number }> {
  const all = await admin.hgetall(PREFIX + key);
  let leased = 0;
  let open = 0;
  for (const [field, value] of Object.entries(all)) {
    if (field.startsWith('r:lease-')) leased += Number(value);
    else if (field.startsWith('r:')) open += Number(value);
  }
  return { used: Number(all['u'] ?? 0), spent: Number(all['s'] ?? 0), leased, open };
}

/**
 * A lease in Redis, and in the store: Redis sent the grant to the store's connection before
 * it answered ours, but the store may not have read it yet. A round trip on the store's own
 * connection (replies come in order) lets it, so its next reservation is taken from the lease.
 */
async function leaseGranted(store: RedisBudgetStore, key: string): Promise<void> {
  await eventually(async () => (await fields(key)).leased > 0, 'a lease in Redis');
  await store.recall('lease-test:round-trip');
}

describe('RedisBudgetStore leases', { skip }, () => {
  const stores: RedisBudgetStore[] = [];
  const open = (options: ConstructorParameters<typeof RedisBudgetStore>[0] = {}): RedisBudgetStore => {
    const store = new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 2_000, ...options });
    stores.push(store);
    return store;
  };
  after(async () => {
    for (const store of stores) await store.close();
  });

  test('after the first request a lease is taken; the next requests write nothing to Redis before their answer', async () => {
    const proxy = await recordingProxy();
    try {
      const store = open({ url: proxy.url });
      await store.connect(2_000);
      const key = counter('quiet');
      assert.deepEqual(await store.reserve(reserve(key, 1_000_000, 100), 'first'), { admitted: true, used: [100] });
      await leaseGranted(store, key);
      // 32 reservations' worth: 3,200 leased, 3,300 used in Redis.
      assert.deepEqual(await fields(key), { used: 3_300, spent: 0, leased: 3_200, open: 100 });
      proxy.sent.length = 0;
      for (let i = 0; i < 10; i++) assert.deepEqual(await store.reserve(reserve(key, 1_000_000, 100), `local-${i}`), { admitted: true, used: [200 + i * 100] });
      assert.deepEqual(proxy.sent, [], 'nothing written');
      // Settled from the lease: what each took leaves it, the real cost is spent.
      await Promise.all(Array.from({ length: 10 }, (_, i) => store.settle(settle(key, 60), `local-${i}`)));
      await store.settle(settle(key, 60), 'first');
      assert.deepEqual(await fields(key), { used: 3_300 - 11 * 100 + 11 * 60, spent: 660, leased: 2_200, open: 0 });
      await store.close();
      assert.deepEqual(await fields(key), { used: 660, spent: 660, leased: 0, open: 0 }, 'the lease went back on close');
    } finally {
      proxy.close();
    }
  });

  test('leased requests that end together are settled in one script call; exactly one of them is told it crossed the alert threshold', async () => {
    const proxy = await recordingProxy();
    try {
      // A lease of 64 reservations: twenty requests leave it above half (no top-up in the write).
      const store = open({ url: proxy.url, leases: { requests: 64 } });
      await store.connect(2_000);
      const key = counter('together');
      await store.reserve(reserve(key, 1_000_000, 100), 'together-first');
      await leaseGranted(store, key);
      for (let i = 0; i < 20; i++) assert.ok((await store.reserve(reserve(key, 1_000_000, 100), `together-${i}`)).admitted);
      proxy.sent.length = 0;
      const ended = Array.from({ length: 20 }, (_, i) => store.settle([{ key, actual: 100, ttlSeconds: 60, alertAt: 1_050 }], `together-${i}`));
      const outcomes = (await Promise.all(ended)).map(([outcome]) => outcome as { spent: number; crossed: boolean });
      assert.equal(proxy.sent.length, 1, `one write: ${JSON.stringify(proxy.sent)}`);
      assert.equal(proxy.sent.join('').split(/\r\n(?:evalsha|eval)\r\n/i).length - 1, 1, 'one script call');
      assert.deepEqual(outcomes.map((outcome) => outcome.spent), Array.from({ length: 20 }, (_, i) => (i + 1) * 100));
      assert.deepEqual(outcomes.flatMap((outcome, i) => (outcome.crossed ? [i] : [])), [10], 'the eleventh crossed 1,050');
      assert.deepEqual(await admin.hmget(PREFIX + key, 's', 'a'), ['2000', '1']);
    } finally {
      proxy.close();
    }
  });

  test('a replica does not refuse for budget its own lease holds: it spends the limit exactly, then refuses', async () => {
    const store = open();
    const key = counter('exact');
    // 40 requests' worth: leases of 2 at most (free / 16 ≥ 2 reservations) until near the end.
    let admitted = 0;
    for (let i = 0; i < 60; i++) {
      const outcome = await store.reserve(reserve(key, 4_000, 100), `exact-${i}`);
      if (!outcome.admitted) break;
      admitted += 1;
      await store.settle(settle(key, 100), `exact-${i}`);
    }
    assert.equal(admitted, 40);
    assert.deepEqual(await fields(key), { used: 4_000, spent: 4_000, leased: 0, open: 0 });
  });

  test('three replicas, concurrent bursts at random amounts: what they admit never passes the limit, and the budget is used up', async () => {
    const key = counter('replicas');
    const limit = 50_000;
    const replicas = [open(), open(), open()];
    let seed = 7;
    const random = () => ((seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647);
    let admittedTotal = 0;
    for (let wave = 0; wave < 12; wave++) {
      await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const store = replicas[i % 3] as RedisBudgetStore;
          const amount = 20 + Math.floor(random() * 200);
          const token = `w${wave}-${i}`;
          const outcome = await store.reserve(reserve(key, limit, amount), token);
          if (!outcome.admitted) return;
          admittedTotal += amount;
          // The worst case comes true: every admitted amount is spent.
          await store.settle(settle(key, amount), token);
        }),
      );
    }
    assert.ok(admittedTotal <= limit, `admitted ${admittedTotal} of ${limit}`);
    for (const store of replicas) await store.close();
    const final = await fields(key);
    assert.equal(final.spent, admittedTotal);
    assert.deepEqual(final, { used: admittedTotal, spent: admittedTotal, leased: 0, open: 0 });
    // 360 requests of ~120 average ask for ~43k: near the end only amounts larger than what is free are refused.
    assert.ok(admittedTotal > limit - 220 || admittedTotal >= 360 * 20, `used up: ${admittedTotal}`);
  });

  test('an idle lease goes back by itself: used returns to spent', async () => {
    const store = open({ leases: { idleMs: 20 } });
    const key = counter('idle');
    await store.reserve(reserve(key, 1_000_000, 100), 'idle-1');
    await leaseGranted(store, key);
    assert.ok(await store.reserve(reserve(key, 1_000_000, 100), 'idle-2'));
    await store.settle(settle(key, 40), 'idle-1');
    await store.settle(settle(key, 40), 'idle-2');
    assert.deepEqual(await eventually(async () => {
      const now = await fields(key);
      return now.leased === 0 ? now : undefined;
    }, 'the idle lease to go back'), { used: 80, spent: 80, leased: 0, open: 0 });
  });

  test('counters refused a lease are forgotten when idle, so they never fill the book for good', async () => {
    const store = open({ leases: { idleMs: 20, maxCounters: 1 } });
    const small = counter('refused');
    // 1,000 free / 16 < two reservations: the lease is refused.
    await store.reserve(reserve(small, 1_000, 100), 'small-1');
    const big = counter('after');
    await eventually(async () => {
      await store.reserve(reserve(big, 1_000_000, 100), `big-${serial++}`);
      return (await fields(big)).leased > 0;
    }, 'a lease on a new counter once the refused one was forgotten', { timeoutMs: 5_000, intervalMs: 50 });
  });

  test('a lowered limit is checked in Redis, with the replica\'s lease given back first', async () => {
    const store = open();
    const key = counter('lowered');
    await store.reserve(reserve(key, 1_000_000, 100), 'low-1');
    await leaseGranted(store, key);
    await store.settle(settle(key, 100), 'low-1');
    // The policy now allows 150: 100 spent; the lease (3,200) must not count against it.
    assert.deepEqual(await store.reserve(reserve(key, 150, 50), 'low-2'), { admitted: true, used: [150] });
    assert.deepEqual(await store.reserve(reserve(key, 150, 50), 'low-3'), { admitted: false, index: 0, used: 150 });
    assert.deepEqual(await fields(key), { used: 150, spent: 100, leased: 0, open: 50 });
  });

  test('leases: false reserves in Redis on every request', async () => {
    const store = open({ leases: false });
    const key = counter('off');
    for (let i = 0; i < 5; i++) await store.reserve(reserve(key, 1_000_000, 100), `off-${i}`);
    assert.deepEqual(await fields(key), { used: 500, spent: 0, leased: 0, open: 500 });
  });
});
