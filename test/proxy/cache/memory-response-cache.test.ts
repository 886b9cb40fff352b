import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryResponseCache } from '../../../proxy/cache/memory-response-cache.ts';
import { answerOfSize, responseCacheStoreSuite } from './response-cache-store-suite.ts';

responseCacheStoreSuite('memory', async (bounds) => new MemoryResponseCache(bounds));

describe('memory response cache', () => {
  test('an entry lives exactly its TTL (injected clock)', async () => {
    let now = 1_000_000;
    const cache = new MemoryResponseCache({ now: () => now });
    await cache.set('k', { body: 'b', createdAt: now }, 1_000);
    now += 999;
    assert.equal((await cache.get('k'))?.body, 'b');
    now += 1;
    assert.equal(await cache.get('k'), undefined);
    assert.deepEqual(cache.stats(), { entries: 0, bytes: 0 }, 'reading an expired entry removes it');
  });

  test('a read makes an entry the most recently used, so another one is evicted', async () => {
    const cache = new MemoryResponseCache({ maxEntries: 2 });
    await cache.set('a', { body: 'a', createdAt: 0 }, 60_000);
    await cache.set('b', { body: 'b', createdAt: 0 }, 60_000);
    await cache.get('a');
    await cache.set('c', { body: 'c', createdAt: 0 }, 60_000);
    assert.equal((await cache.get('a'))?.body, 'a');
    assert.equal(await cache.get('b'), undefined);
    assert.equal((await cache.get('c'))?.body, 'c');
  });

  test('writes sweep expired entries, so they stop holding the byte budget', async () => {
    let now = 0;
    const cache = new MemoryResponseCache({ now: () => now });
    for (let i = 0; i < 10; i++) await cache.set(`old-${i}`, answerOfSize(1_000), 100);
    now = 200;
    await cache.set('new', answerOfSize(1_000), 100);
    assert.equal(cache.stats().entries, 1);
  });

  test('bytes count key, body and headers in UTF-8', async () => {
    const cache = new MemoryResponseCache();
    await cache.set('kk', { body: 'é😀', createdAt: 0, headers: { ab: 'cd' } }, 1_000);
    assert.deepEqual(cache.stats(), { entries: 1, bytes: 2 + 2 + 4 + 4 });
  });

  test('a flood of 20 000 distinct keys keeps both bounds', async () => {
    const maxEntries = 1_000;
    const maxBytes = 1_000_000;
    const cache = new MemoryResponseCache({ maxEntries, maxBytes });
    let peakEntries = 0;
    let peakBytes = 0;
    for (let i = 0; i < 20_000; i++) {
      // Sizes from 200 B to ~4 KB, so sometimes entries and sometimes bytes are the binding bound.
      await cache.set(`flood-${i}`, answerOfSize(200 + ((i * 7919) % 3_800)), 60_000);
      const { entries, bytes } = cache.stats();
      peakEntries = Math.max(peakEntries, entries);
      peakBytes = Math.max(peakBytes, bytes);
    }
    assert.ok(peakEntries <= maxEntries, `peak entries ${peakEntries}`);
    assert.ok(peakBytes <= maxBytes, `peak bytes ${peakBytes}`);
    assert.ok(cache.stats().bytes > maxBytes * 0.9, 'the budget is actually used');
    assert.ok((await cache.get('flood-19999')) !== undefined);
    assert.equal(await cache.get('flood-0'), undefined);
  });

  test('options are validated', () => {
    assert.throws(() => new MemoryResponseCache({ maxEntries: 0 }), RangeError);
    assert.throws(() => new MemoryResponseCache({ maxBytes: 1.5 }), RangeError);
  });
});
