// The behaviour every SemanticIndex must show; each implementation's test file runs it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { SemanticIndex } from '../../../proxy/cache/semantic-cache.ts';
import { eventually } from '../../helpers/eventually.ts';

export interface IndexBounds {
  maxPerPartition?: number;
  maxEntries?: number;
}

const HOUR = 3_600_000;

/** A unit vector along axis `i` of `dims`, tilted towards axis `j` by `tilt`. */
export function axis(i: number, dims = 16, j?: number, tilt = 0): number[] {
  const v = new Array<number>(dims).fill(0);
  v[i] = 1;
  if (j !== undefined) v[j] = tilt;
  return v;
}

/** Registers the shared tests under `name`; `create` gives a fresh, empty index. */
export function semanticIndexSuite(name: string, create: (bounds?: IndexBounds) => Promise<SemanticIndex>): void {
  let partitions = 0;
  const partition = (): string => `suite-partition-${++partitions}`;

  async function withIndex(run: (index: SemanticIndex) => Promise<void>, bounds?: IndexBounds): Promise<void> {
    const index = await create(bounds);
    try {
      await run(index);
    } finally {
      await index.close();
    }
  }

  describe(`${name} semantic index`, () => {
    test('finds an added vector, and a near one, with its cosine as the score', () =>
      withIndex(async (index) => {
        const p = partition();
        await index.add(p, axis(0), 'k0', HOUR);
        const same = await index.search(p, axis(0), 0.95);
        assert.equal(same?.key, 'k0');
        assert.ok(Math.abs(same.score - 1) < 1e-6);
        const near = await index.search(p, axis(0, 16, 1, 0.2), 0.95); // cos = 1/sqrt(1.04) ≈ 0.981
        assert.equal(near?.key, 'k0');
        assert.ok(Math.abs(near.score - 1 / Math.sqrt(1.04)) < 1e-6);
      }));

    test('below the threshold is a miss; the vector length does not matter, only its direction', () =>
      withIndex(async (index) => {
        const p = partition();
        await index.add(p, axis(0).map((x) => x * 7), 'k0', HOUR);
        assert.equal(await index.search(p, axis(0, 16, 1, 0.5), 0.95), undefined); // ≈ 0.894
        assert.equal((await index.search(p, axis(0, 16, 1, 0.5), 0.85))?.key, 'k0');
        assert.equal((await index.search(p, axis(0).map((x) => x / 3), 0.99))?.key, 'k0');
      }));

    test('the nearest of several entries wins', () =>
      withIndex(async (index) => {
        const p = partition();
        await index.add(p, axis(0), 'x', HOUR);
        await index.add(p, axis(1), 'y', HOUR);
        await index.add(p, axis(0, 16, 1, 1), 'xy', HOUR);
        assert.equal((await index.search(p, axis(0, 16, 1, 0.1), 0.5))?.key, 'x');
        assert.equal((await index.search(p, axis(1, 16, 0, 0.1), 0.5))?.key, 'y');
        assert.equal((await index.search(p, axis(0, 16, 1, 0.9), 0.5))?.key, 'xy');
      }));

    test('partitions never see each other', () =>
      withIndex(async (index) => {
        const a = partition();
        const b = partition();
        await index.add(a, axis(0), 'in-a', HOUR);
        assert.equal(await index.search(b, axis(0), 0.5), undefined);
        await index.add(b, axis(0), 'in-b', HOUR);
        assert.equal((await index.search(a, axis(0), 0.5))?.key, 'in-a');
        assert.equal((await index.search(b, axis(0), 0.5))?.key, 'in-b');
      }));

    test('adding a key again replaces its vector', () =>
      withIndex(async (index) => {
        const p = partition();
        await index.add(p, axis(0), 'k', HOUR);
        await index.add(p, axis(1), 'k', HOUR);
        assert.equal(await index.search(p, axis(0), 0.5), undefined);
        assert.equal((await index.search(p, axis(1), 0.5))?.key, 'k');
      }));

    test('entries expire after their TTL', () =>
      withIndex(async (index) => {
        const p = partition();
        await index.add(p, axis(0), 'long', HOUR);
        await index.add(p, axis(1), 'short', 40);
        await eventually(async () => (await index.search(p, axis(1), 0.9)) === undefined, 'short entry expiring');
        assert.equal((await index.search(p, axis(0), 0.9))?.key, 'long');
      }));

    test('a full partition drops its oldest entries', () =>
      withIndex(
        async (index) => {
          const p = partition();
          for (let i = 0; i < 8; i++) await index.add(p, axis(i), `k${i}`, HOUR);
          for (let i = 0; i < 5; i++) assert.equal(await index.search(p, axis(i), 0.9), undefined, `k${i} was dropped`);
          for (let i = 5; i < 8; i++) assert.equal((await index.search(p, axis(i), 0.9))?.key, `k${i}`);
          assert.equal(index.stats().entries, 3);
        },
        { maxPerPartition: 3 },
      ));

    test('vectors of another length and all-zero vectors never match', () =>
      withIndex(async (index) => {
        const p = partition();
        await index.add(p, axis(0), 'k', HOUR);
        assert.equal(await index.search(p, axis(0, 32), 0), undefined);
        assert.equal(await index.search(p, new Array<number>(16).fill(0), 0.01), undefined);
        await index.add(p, new Array<number>(16).fill(0), 'zero', HOUR);
        assert.equal((await index.search(p, axis(0), 0.5))?.key, 'k');
      }));

    test('invalid TTLs are rejected', () =>
      withIndex(async (index) => {
        await assert.rejects(index.add(partition(), axis(0), 'k', 0), RangeError);
        await assert.rejects(index.add(partition(), axis(0), 'k', Number.NaN), RangeError);
      }));
  });
}
