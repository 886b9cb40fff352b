// The work queue: a key is queued once however often it is added, a key added while it is
// processed runs once more afterwards, and failures come back with exponential backoff.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkQueue } from '../../operator/k8s/work-queue.ts';
import { eventually } from '../helpers/eventually.ts';

describe('WorkQueue', () => {
  test('adding a key many times while it waits processes it once', async () => {
    const seen: string[] = [];
    let release: () => void = () => undefined;
    const queue = new WorkQueue({
      process: async (key) => {
        seen.push(key);
        if (key === 'gate') await new Promise<void>((resolve) => (release = resolve));
      },
    });
    queue.add('gate');
    for (let i = 0; i < 50; i++) queue.add('render');
    queue.add('other');
    assert.equal(queue.depth, 2);
    release();
    await eventually(() => seen.length >= 3, 'every key', { timeoutMs: 10_000 });
    await queue.stop();
    assert.deepEqual(seen, ['gate', 'render', 'other']);
  });

  test('a key added while it is being processed runs once more afterwards', async () => {
    let runs = 0;
    let release: () => void = () => undefined;
    const queue = new WorkQueue({
      process: async () => {
        runs += 1;
        if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
      },
    });
    queue.add('render');
    await eventually(() => runs === 1, 'the first run', { timeoutMs: 10_000 });
    queue.add('render');
    queue.add('render');
    release();
    await eventually(() => runs === 2, 'the second run', { timeoutMs: 10_000 });
    await queue.stop();
    assert.equal(runs, 2);
  });

  test('a failing key is retried with growing delays, and the depth is reported', async () => {
    const attempts: number[] = [];
    const delays: number[] = [];
    const depths: number[] = [];
    const queue = new WorkQueue({
      baseDelayMs: 5,
      process: async () => {
        attempts.push(Date.now());
        if (attempts.length < 4) throw new Error('boom');
      },
      onError: (_key, _error, retryInMs) => delays.push(retryInMs),
      onDepth: (depth) => depths.push(depth),
    });
    queue.add('render');
    await eventually(() => attempts.length === 4, 'four attempts', { timeoutMs: 10_000 });
    await queue.stop();
    assert.deepEqual(delays, [5, 10, 20]);
    assert.ok(depths.includes(1) && depths.includes(0));
  });
});
