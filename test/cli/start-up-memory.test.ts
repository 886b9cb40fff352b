// Idle memory (issue 32): `serve` hands back the young generation start-up grew, once, before it
// listens — without leaving gc() exposed or --expose-gc set (the flag is in the compile cache's key).
import assert from 'node:assert/strict';
import { getHeapSpaceStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'node:test';
import { releaseStartUpMemory } from '../../bin/start-up-memory.ts';

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
