// Idle memory (issue 32): `serve` hands back the young generation start-up grew, once, before it
// listens — without leaving gc() exposed or --expose-gc set (the flag is in the compile cache's key).
// After traffic it does the same once the event loop idles.
import assert from 'node:assert/strict';
import { getHeapSpaceStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'node:test';
import { releaseMemoryWhenIdle, releaseStartUpMemory } from '../../bin/start-up-memory.ts';

test('one memory-reducing collection: the young generation shrinks, no gc() is left behind', () => {
  const keep: unknown[] = [];
  for (let index = 0; index < 200_000; index++) keep.push({ index }); // survivors grow the young generation
  keep.length = 0;
  releaseStartUpMemory();
  const young = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
  assert.ok(young !== undefined && young.physical_space_size <= 2 * 1024 * 1024, `young generation still ${young?.physical_space_size} bytes resident`);
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
  assert.equal(runInNewContext('typeof gc'), 'undefined', '--expose-gc was left set');
});

test('after traffic, memory goes back once the loop has idled two samples in a row, and only when it grew', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let busy = 1;
  let resident = 100;
  const collections: number[] = [];
  const reports: Array<[number, number]> = [];
  const release = releaseMemoryWhenIdle({
    intervalMs: 1_000,
    minGrowthBytes: 16,
    utilisation: () => busy,
    residentBytes: () => resident,
    collect: () => {
      collections.push(resident);
      resident = 110; // the collection handed pages back
    },
    onReleased: (before, after) => reports.push([before, after]),
  });
  resident = 150;
  t.mock.timers.tick(5_000);
  assert.deepEqual(collections, [], 'never while serving');
  busy = 0;
  t.mock.timers.tick(1_000);
  assert.deepEqual(collections, [], 'one idle sample is not enough');
  busy = 0.5;
  t.mock.timers.tick(1_000);
  busy = 0;
  t.mock.timers.tick(1_000);
  assert.deepEqual(collections, [], 'the idle samples must be in a row');
  t.mock.timers.tick(1_000);
  assert.deepEqual(collections, [150]);
  t.mock.timers.tick(10_000);
  assert.deepEqual(collections, [150], 'nothing grew since: no second collection');
  resident = 140;
  t.mock.timers.tick(2_000);
  assert.deepEqual(collections, [150, 140], 'grew again by more than the threshold');
  assert.deepEqual(reports, [[150, 110], [140, 110]], 'each release is reported with the resident set before and after');
  release.stop();
  resident = 500;
  t.mock.timers.tick(10_000);
  assert.deepEqual(collections, [150, 140], 'stopped');
});
