// The batch worker's lease: its heartbeat keeps going while a pass is stuck on a long store
// step (validating a large input file, finalizing a large batch, a slow database), so
// another replica's sweep never takes a live worker for dead and fails its in-flight lines.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { BatchRunner } from '../../proxy/batches/batch-runner.ts';
import type { BatchStore } from '../../proxy/batches/batch-store.ts';
import { eventually } from '../helpers/eventually.ts';

const LEASE_MS = 40;

/** A store whose first validateNext hangs until released; it counts heartbeats. */
function slowStore(): { store: BatchStore; heartbeats: () => number; release: () => void } {
  let heartbeats = 0;
  let release!: () => void;
  const stuck = new Promise<undefined>((resolve) => {
    release = () => resolve(undefined);
  });
  let validations = 0;
  const store = {
    heartbeat: async () => {
      heartbeats++;
    },
    forgetOtherWorkers: async () => undefined,
    failOrphanedLines: async () => 0,
    validateNext: async () => (validations++ === 0 ? stuck : undefined),
    claimLines: async () => [],
    releaseLine: async () => undefined,
    finishLine: async () => true,
    finalizeReady: async () => [],
  } as unknown as BatchStore;
  return { store, heartbeats: () => heartbeats, release };
}

test('the heartbeat keeps the lease while a pass is stuck in the store', async () => {
  const { store, heartbeats, release } = slowStore();
  const runner = new BatchRunner({ store, execute: async () => ({ notRun: true }), logger: pino({ level: 'silent' }), leaseMs: LEASE_MS, pollIntervalMs: 5 });
  await runner.start();
  // The first pass is waiting on validateNext; a lease is LEASE_MS, beats come every LEASE_MS / 4.
  await eventually(() => heartbeats() >= 5, 'heartbeats during a pass that outlasts the lease');
  release();
  await runner.stop();
});

// An idle worker polls less: each empty pass doubles the next wait (up to 8× the interval),
// so an idle gateway's serving thread is not woken 4 times a second for store queries; a new
// batch (wake) runs a pass at once.
test('empty passes back off to 8× the poll interval; a wake runs a pass at once', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const passes: number[] = [];
  let clock = 0;
  const store = {
    heartbeat: async () => undefined,
    forgetOtherWorkers: async () => undefined,
    failOrphanedLines: async () => 0,
    validateNext: async () => undefined,
    claimLines: async () => {
      passes.push(clock);
      return [];
    },
    releaseLine: async () => undefined,
    finishLine: async () => true,
    finalizeReady: async () => [],
  } as unknown as BatchStore;
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  const advance = async (ms: number): Promise<void> => {
    for (let step = 0; step < ms; step += 50) {
      clock += 50;
      t.mock.timers.tick(50);
      await settle();
    }
  };
  const runner = new BatchRunner({ store, execute: async () => ({ notRun: true }), logger: pino({ level: 'silent' }), leaseMs: 60_000, pollIntervalMs: 100, now: () => clock });
  await runner.start();
  await settle();
  await advance(3_000);
  // 0, then waits of 200, 400, 800, 800, …
  assert.deepEqual(passes, [0, 200, 600, 1400, 2200, 3000]);
  runner.wake();
  await settle();
  assert.equal(passes.at(-1), 3_000);
  assert.equal(passes.length, 7, 'the wake ran a pass without waiting');
  await advance(200);
  assert.equal(passes.length, 8, 'and the backoff starts again from the interval');
  const stopping = runner.stop();
  await settle();
  await stopping;
});
