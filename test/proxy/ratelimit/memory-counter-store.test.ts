import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryCounterStore } from '../../../proxy/ratelimit/memory-counter-store.ts';
import { counterStoreSuite } from './counter-store-suite.ts';

counterStoreSuite('memory', async () => new MemoryCounterStore());

const MINUTE = 60_000;
const T0 = 20_000 * 86_400_000;
const spec = (key: string, limit = 10) => ({ key, windowMs: MINUTE, limit });

describe('memory counter store bounds', () => {
  test('beyond maxKeys the least recently used counter is evicted', async () => {
    const store = new MemoryCounterStore({ maxKeys: 2 });
    await store.consume(spec('a'), 1, T0);
    await store.consume(spec('b'), 1, T0);
    await store.peek(spec('a'), T0); // a is now more recent than b
    await store.consume(spec('c'), 1, T0);
    assert.equal(store.size, 2);
    assert.equal((await store.peek(spec('a'), T0)).used, 1);
    assert.equal((await store.peek(spec('b'), T0)).used, 0, 'b was evicted');
    assert.equal((await store.peek(spec('c'), T0)).used, 1);
  });

  test('peek never creates a counter', async () => {
    const store = new MemoryCounterStore();
    await store.peek(spec('ghost'), T0);
    assert.equal(store.size, 0);
  });

  test('expired counters are dropped as later writes pass them', async () => {
    const store = new MemoryCounterStore();
    await store.consume(spec('old-1'), 1, T0);
    await store.consume(spec('old-2'), 1, T0);
    assert.equal(store.size, 2);
    // Two windows on, both are expired; a write elsewhere sweeps them.
    await store.consume(spec('new'), 1, T0 + 2 * MINUTE);
    assert.equal(store.size, 1);
  });

  test('a counter refunded to zero is not kept', async () => {
    const store = new MemoryCounterStore();
    await store.add(spec('k'), 3, T0);
    await store.add(spec('k'), -3, T0);
    assert.equal(store.size, 0);
  });

  test('maxKeys must be a positive integer', () => {
    assert.throws(() => new MemoryCounterStore({ maxKeys: 0 }), RangeError);
  });
});
