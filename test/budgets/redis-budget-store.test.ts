// The Redis budget store's wire behaviour: one round trip per request (a settlement rides in
// the same write as the next reservation, ahead of it), settlements never left behind (sent
// alone within milliseconds, and on close), failures in the store's error shape, and the
// shared connection's auto-pipeline left to the other stores.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import { openRedisConnection } from '../../proxy/redis/fail-fast-redis.ts';
import { admin, PREFIX, recordingProxy, REDIS_URL, rejection, silentServer, skip } from '../helpers/redis-test-kit.ts';

const counter = (name: string): string => `{budget}:store-test:${name}:${process.pid}`;

describe('RedisBudgetStore on the wire', { skip }, () => {
  const stores: RedisBudgetStore[] = [];
  after(async () => {
    for (const store of stores) await store.close();
  });

  test('a settlement rides in the same write as the next reservation, ahead of it: the reservation sees the refund', async () => {
    const proxy = await recordingProxy();
    const store = new RedisBudgetStore({ url: proxy.url, keyPrefix: PREFIX, commandTimeoutMs: 2_000 });
    stores.push(store);
    try {
      await store.connect(2_000);
      const key = counter('ride');
      assert.deepEqual(await store.reserve([{ key, limit: 100, amount: 100, ttlSeconds: 0 }], 'token-first-request'), { admitted: true, used: [100] });
      // The first request ends (refund all) and the second arrives before the settlement was sent.
      const settled = store.settle([{ key, actual: 0, ttlSeconds: 0, alertAt: -1 }], 'token-first-request');
      proxy.sent.length = 0;
      // The next request comes in a later turn of the event loop (an auto-pipeline would have sent the settlement by then).
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(await store.reserve([{ key, limit: 100, amount: 100, ttlSeconds: 0 }], 'token-second-request'), { admitted: true, used: [100] });
      assert.deepEqual(await settled, [{ used: 0, spent: 0, crossed: false }]);
      assert.equal(proxy.sent.length, 1, 'one write for both scripts');
      const [write] = proxy.sent as [string];
      assert.ok(write.indexOf('token-first-request') >= 0 && write.indexOf('token-first-request') < write.indexOf('token-second-request'), 'the settlement first');
      assert.deepEqual(await admin.hmget(PREFIX + key, 'u', 's', 'r:token-first-request', 'r:token-second-request'), ['100', '0', null, '100']);
    } finally {
      proxy.close();
    }
  });

  test('a settlement with no reservation after it is sent alone; close sends the ones still waiting', async () => {
    const store = new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 2_000 });
    await store.connect(2_000);
    const key = counter('alone');
    await store.reserve([{ key, limit: 1_000, amount: 300, ttlSeconds: 60 }], 'alone-1');
    assert.deepEqual(await store.settle([{ key, actual: 120, ttlSeconds: 60, alertAt: 200 }], 'alone-1'), [{ used: 120, spent: 120, crossed: false }]);
    await store.reserve([{ key, limit: 1_000, amount: 300, ttlSeconds: 60 }], 'alone-2');
    const last = store.settle([{ key, actual: 100, ttlSeconds: 60, alertAt: 200 }], 'alone-2');
    await store.close();
    assert.deepEqual(await last, [{ used: 220, spent: 220, crossed: true }]);
    assert.deepEqual(await admin.hmget(PREFIX + key, 'u', 's', 'a'), ['220', '220', '1']);
  });

  test('a settlement that cannot be sent fails in the store\'s unavailable shape', async () => {
    const silent = await silentServer();
    const store = new RedisBudgetStore({ url: silent.url, commandTimeoutMs: 50 });
    try {
      const error = await rejection(() => store.settle([{ key: counter('down'), actual: 5, ttlSeconds: 0, alertAt: -1 }], 'down-1'));
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    } finally {
      await store.close();
      silent.close();
    }
  });

  test('on a shared connection the budget scripts skip its auto-pipeline; the other commands keep it, other clients are untouched', async () => {
    const connection = openRedisConnection(REDIS_URL);
    const store = new RedisBudgetStore({ connection });
    try {
      assert.deepEqual(connection.client.options.autoPipeliningIgnoredCommands, ['aigwBudgetReserve', 'aigwBudgetSettle', 'aigwBudgetCancel', 'aigwBudgetLease', 'aigwBudgetSettleLeased']);
      assert.equal(connection.client.options.enableAutoPipelining, true);
      const other = new Redis(REDIS_URL, { lazyConnect: true });
      assert.deepEqual(other.options.autoPipeliningIgnoredCommands, [], "ioredis's shared default array is not modified");
      other.disconnect();
    } finally {
      await store.close();
      await connection.close();
    }
  });
});
