// Idle memory (issue 32): `serve` hands back the young generation start-up grew, once, before it
// listens — without leaving gc() exposed or --expose-gc set (the flag is in the compile cache's key).
// After traffic it does the same once the event loop idles.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { getHeapSpaceStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'node:test';
import { headroomPercent, releaseMemoryWhenIdle, releaseStartUpMemory } from '../../bin/start-up-memory.ts';

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
    headroomBytes: 0, // not this test's subject (and not the runner's V8 flags)
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

const MIB = 1024 * 1024;

test('the heap growing percent that leaves the headroom above the live heap', () => {
  assert.equal(headroomPercent(32 * MIB, 32 * MIB), 100);
  assert.equal(headroomPercent(32 * MIB, 40 * MIB), 80);
  assert.equal(headroomPercent(32 * MIB, 300 * MIB), 11, 'a large heap: about V8\'s own minimum factor (1.1)');
  assert.equal(headroomPercent(32 * MIB, 0), 1_000, 'bounded');
  assert.equal(headroomPercent(0, 32 * MIB), 0, '0: V8\'s own heuristic');
});

test('while quiet, collections leave the headroom; once traffic is back, V8 decides again', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let busy = 1;
  let live = 40 * MIB;
  let resident = 100 * MIB;
  const events: string[] = [];
  const release = releaseMemoryWhenIdle({
    intervalMs: 1_000,
    minGrowthBytes: 16 * MIB,
    utilisation: () => busy,
    residentBytes: () => resident,
    liveBytes: () => live,
    headroomBytes: 32 * MIB,
    setGrowingPercent: (percent) => events.push(`percent ${percent}`),
    collect: () => {
      events.push('collect');
      live = 64 * MIB; // what the next stretch's percent is computed from
      resident = 100 * MIB;
    },
  });
  t.mock.timers.tick(5_000);
  assert.deepEqual(events, [], 'nothing while serving');
  busy = 0;
  t.mock.timers.tick(2_000);
  assert.deepEqual(events, ['percent 80'], 'quiet, nothing grew: the percent is set for V8\'s own idle collections (live at start-up)');
  resident = 130 * MIB;
  t.mock.timers.tick(2_000);
  assert.deepEqual(events, ['percent 80', 'collect'], 'set once, before the release\'s collection');
  busy = 0.2; // the collections' own marking steps busy the loop for a sample or two
  t.mock.timers.tick(2_000);
  assert.deepEqual(events, ['percent 80', 'collect'], 'two busy samples are not traffic');
  busy = 0;
  t.mock.timers.tick(1_000);
  busy = 0.2;
  t.mock.timers.tick(3_000);
  assert.deepEqual(events, ['percent 80', 'collect', 'percent 0'], 'three in a row are: V8\'s heuristic again');
  busy = 0;
  t.mock.timers.tick(2_000);
  assert.deepEqual(events, ['percent 80', 'collect', 'percent 0', 'percent 50'], 'the next quiet stretch: from the live heap after the last release');
  release.stop();
});

test('headroom 0 never touches V8\'s heuristic', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  const percents: number[] = [];
  let resident = 100 * MIB;
  const release = releaseMemoryWhenIdle({
    intervalMs: 1_000,
    utilisation: () => 0,
    residentBytes: () => (resident += 32 * MIB),
    liveBytes: () => 40 * MIB,
    headroomBytes: 0,
    setGrowingPercent: (percent) => percents.push(percent),
    collect: () => undefined,
  });
  t.mock.timers.tick(10_000);
  assert.deepEqual(percents, []);
  release.stop();
});

test('V8: after the idle release with headroom, the next burst runs no full collection; without, it runs one', () => {
  const child = fileURLToPath(new URL('./fixtures/idle-headroom-child.ts', import.meta.url));
  const burst = (headroomMib: number): { majors: number } =>
    JSON.parse(execFileSync(process.execPath, ['--max-semi-space-size=16', child, String(headroomMib)], { encoding: 'utf8', timeout: 120_000 })) as { majors: number };
  assert.ok(burst(0).majors >= 1, 'V8\'s limit after a memory-reducing collection: the burst runs a full collection');
  assert.equal(burst(32).majors, 0);
});
