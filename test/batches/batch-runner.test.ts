// The batch worker's lease: its heartbeat keeps going while a pass is stuck on a long store
// step (validating a large input file, finalizing a large batch, a slow database), so
// another replica's sweep never takes a live worker for dead and fails its in-flight lines.
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
