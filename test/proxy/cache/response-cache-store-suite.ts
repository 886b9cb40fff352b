// The behaviour every ResponseCacheStore must show; each implementation's test file runs it.
// Expiry is real time with short TTLs and polling deadlines (Redis's clock cannot be faked);
// the memory store's exact TTL boundary is tested with an injected clock in its own file.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { CachedAnswer, ResponseCacheStore } from '../../../proxy/cache/response-cache-store.ts';
import { eventually } from '../../helpers/eventually.ts';

export interface StoreBounds {
  maxEntries?: number;
  maxBytes?: number;
  maxEntryBytes?: number;
}

const HOUR = 3_600_000;

/** A chat answer of about `size` bytes; `random` makes it incompressible. */
export function answerOfSize(size: number, random = false, createdAt = 1_700_000_000_000): CachedAnswer {
  const text = random ? randomBytes(Math.ceil(size * 0.75)).toString('base64').slice(0, size) : 'All work and no play. '.repeat(Math.ceil(size / 22)).slice(0, size);
  return {
    body: JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] }),
    createdAt,
    headers: { 'openai-model': 'gpt-4o-mini' },
  };
}

/** Registers the shared tests under `name`; `create` gives a fresh, empty store with the given bounds. */
export function responseCacheStoreSuite(name: string, create: (bounds?: StoreBounds) => Promise<ResponseCacheStore>): void {
  async function withStore(run: (store: ResponseCacheStore) => Promise<void>, bounds?: StoreBounds): Promise<void> {
    const store = await create(bounds);
    try {
      await run(store);
    } finally {
      await store.close();
    }
  }

  describe(`${name} response cache store`, () => {
    test('get returns what set stored, headers and createdAt included; unknown keys are undefined', () =>
      withStore(async (store) => {
        const answer: CachedAnswer = { body: '{"id":"x","choices":[]}', createdAt: 1234, headers: { 'x-a': '1', 'openai-model': 'm' } };
        assert.equal(await store.get('k1'), undefined);
        await store.set('k1', answer, HOUR);
        assert.deepEqual(await store.get('k1'), answer);
        await store.set('k2', { body: 'é ✓ 😀 {"ok":true}', createdAt: 5 }, HOUR);
        assert.deepEqual(await store.get('k2'), { body: 'é ✓ 😀 {"ok":true}', createdAt: 5 });
        assert.equal(await store.get('k3'), undefined);
      }));

    test('set replaces, delete removes, deleting a missing key is fine', () =>
      withStore(async (store) => {
        await store.set('k', { body: 'one', createdAt: 1 }, HOUR);
        await store.set('k', { body: 'two', createdAt: 2 }, HOUR);
        assert.equal((await store.get('k'))?.body, 'two');
        assert.equal(store.stats().entries, 1);
        await store.delete('k');
        assert.equal(await store.get('k'), undefined);
        await store.delete('k');
        await store.delete('never-set');
        assert.equal(store.stats().entries, 0);
        assert.equal(store.stats().bytes, 0);
      }));

    test('entries expire after their TTL; longer-lived ones stay', () =>
      withStore(async (store) => {
        await store.set('long', { body: 'stays', createdAt: 1 }, HOUR);
        await store.set('short', { body: 'goes', createdAt: 1 }, 40);
        await eventually(async () => (await store.get('short')) === undefined, 'short entry expiring');
        assert.equal((await store.get('long'))?.body, 'stays');
      }));

    test('large values round-trip intact (compressible and not)', () =>
      withStore(async (store) => {
        const compressible = answerOfSize(300_000);
        const random = answerOfSize(200_000, true);
        await store.set('big-text', compressible, HOUR);
        await store.set('big-random', random, HOUR);
        assert.deepEqual(await store.get('big-text'), compressible);
        assert.deepEqual(await store.get('big-random'), random);
      }));

    test('stats count entries and bytes', () =>
      withStore(async (store) => {
        assert.deepEqual(store.stats(), { entries: 0, bytes: 0 });
        for (let i = 0; i < 5; i++) await store.set(`s${i}`, answerOfSize(1_000), HOUR);
        const full = store.stats();
        assert.equal(full.entries, 5);
        assert.ok(full.bytes >= 5 * 1_000, `bytes ${full.bytes}`);
        await store.delete('s0');
        assert.equal(store.stats().entries, 4);
        assert.ok(store.stats().bytes < full.bytes);
      }));

    test('an answer over the entry limit is not stored, and replaces nothing', () =>
      withStore(
        async (store) => {
          await store.set('k', answerOfSize(1_000), HOUR);
          await store.set('k', answerOfSize(20_000), HOUR);
          assert.equal(await store.get('k'), undefined, 'the stale answer is gone too');
          assert.equal(store.stats().entries, 0);
        },
        { maxEntryBytes: 10_000 },
      ));

    test('a flood of distinct keys stays within maxEntries; the newest entries survive', () =>
      withStore(
        async (store) => {
          for (let i = 0; i < 500; i++) {
            await store.set(`flood-${i}`, answerOfSize(200), HOUR + i);
            assert.ok(store.stats().entries <= 50, `entries ${store.stats().entries} after ${i + 1} writes`);
          }
          assert.equal(store.stats().entries, 50);
          assert.equal(await store.get('flood-0'), undefined);
          assert.ok((await store.get('flood-499')) !== undefined);
        },
        { maxEntries: 50 },
      ));

    test('a flood of distinct keys stays within maxBytes', () =>
      withStore(
        async (store) => {
          for (let i = 0; i < 300; i++) {
            await store.set(`bytes-${i}`, answerOfSize(2_000, true), HOUR + i);
            assert.ok(store.stats().bytes <= 40_000, `bytes ${store.stats().bytes} after ${i + 1} writes`);
          }
          const { entries, bytes } = store.stats();
          assert.ok(entries >= 10 && entries <= 20, `entries ${entries}`);
          assert.ok(bytes > 30_000 && bytes <= 40_000, `bytes ${bytes}`);
          assert.ok((await store.get('bytes-299')) !== undefined);
        },
        { maxBytes: 40_000 },
      ));

    test('invalid TTLs are rejected', () =>
      withStore(async (store) => {
        for (const ttl of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
          await assert.rejects(store.set('k', { body: 'x', createdAt: 0 }, ttl), RangeError);
        }
        assert.equal(await store.get('k'), undefined);
      }));

    test('concurrent sets and gets of many keys all land', () =>
      withStore(async (store) => {
        await Promise.all(Array.from({ length: 200 }, (_, i) => store.set(`c${i}`, { body: `b${i}`, createdAt: i }, HOUR)));
        const got = await Promise.all(Array.from({ length: 200 }, (_, i) => store.get(`c${i}`)));
        assert.deepEqual(got.map((a) => a?.body), Array.from({ length: 200 }, (_, i) => `b${i}`));
        assert.equal(store.stats().entries, 200);
      }));
  });
}
