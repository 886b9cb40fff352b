// The batched writer against scripted stores: batching, the bounded queue under a flood,
// and write failures that are counted and survived.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';
import { startLogRetention } from '../../../proxy/logs/log-retention.ts';
import type { RequestLogStore } from '../../../proxy/logs/request-log-store.ts';
import { createRequestLogWriter, isTransientStoreError } from '../../../proxy/logs/request-log-writer.ts';
import { logRecord } from './request-log-store-suite.ts';
import { eventually } from '../../helpers/eventually.ts';

/** A store that records batches; `gate` (when set) holds every insert until released. */
function scriptedStore(behaviour: { fail?: () => boolean; failWith?: () => Error | undefined; gate?: Promise<void> } = {}) {
  const batches: RequestRecord[][] = [];
  const deletes: number[] = [];
  const store: RequestLogStore = {
    async insertMany(records) {
      if (behaviour.gate !== undefined) await behaviour.gate;
      if (behaviour.fail?.() === true) throw new Error('database is down');
      const error = behaviour.failWith?.();
      if (error !== undefined) throw error;
      batches.push([...records]);
    },
    query: () => Promise.reject(new Error('not used')),
    get: () => Promise.reject(new Error('not used')),
    summary: () => Promise.reject(new Error('not used')),
    async deleteOlderThan(cutoffMs) {
      deletes.push(cutoffMs);
      return 3;
    },
    close: () => Promise.resolve(),
  };
  return { store, batches, deletes };
}

async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return value?.value ?? 0;
}

describe('request log writer', () => {
  test('writes full batches at once and the remainder on flush, in order', async () => {
    const { store, batches } = scriptedStore();
    const writer = createRequestLogWriter(store, { batchSize: 3, flushIntervalMs: 60_000 });
    const records = Array.from({ length: 7 }, () => logRecord());
    for (const record of records) writer.sink(record);
    await eventually(() => batches.length >= 2, 'two full batches', { timeoutMs: 10_000 });
    assert.deepEqual(batches.map((b) => b.length), [3, 3]);
    await writer.flush();
    assert.deepEqual(batches.map((b) => b.length), [3, 3, 1]);
    assert.deepEqual(batches.flat(), records);
    assert.equal(writer.stats().written, 7);
    await writer.close();
  });

  test('a part-filled batch is written by the interval timer', async () => {
    const { store, batches } = scriptedStore();
    const writer = createRequestLogWriter(store, { batchSize: 100, flushIntervalMs: 20 });
    writer.sink(logRecord());
    writer.sink(logRecord());
    await eventually(() => batches.length === 1, 'the timer flush', { timeoutMs: 10_000 });
    assert.equal(batches[0]?.length, 2);
    await writer.close();
  });

  test('a part-filled batch waits flushIntervalMs from its first record; an idle writer has no timer to wake', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'setImmediate'] });
    const { store, batches } = scriptedStore();
    const writer = createRequestLogWriter(store, { batchSize: 100, flushIntervalMs: 100 });
    /** The batch sizes written once `ms` more have passed (the inserts' promises settled). */
    const after = async (ms: number): Promise<number[]> => {
      t.mock.timers.tick(ms);
      for (let turn = 0; turn < 10; turn++) await Promise.resolve();
      return batches.map((batch) => batch.length);
    };
    t.mock.timers.tick(90);
    writer.sink(logRecord());
    // 110 ms after the writer began: a timer from its start would have written the record by now.
    assert.deepEqual(await after(20), []);
    assert.deepEqual(await after(80), [1]);
    // The next record starts its own wait.
    writer.sink(logRecord());
    assert.deepEqual(await after(99), [1]);
    assert.deepEqual(await after(1), [1, 1]);
    await writer.close();
  });

  test('the sink never writes synchronously: it only queues', () => {
    const { store, batches } = scriptedStore();
    const writer = createRequestLogWriter(store, { batchSize: 1, flushIntervalMs: 60_000 });
    writer.sink(logRecord());
    assert.equal(batches.length, 0);
    assert.equal(writer.stats().queued, 1);
    return writer.close();
  });

  test('a flood against a stalled store keeps the queue bounded, counts every drop, and never blocks', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { store, batches } = scriptedStore({ gate });
    const registry = new Registry();
    const writer = createRequestLogWriter(store, { maxQueue: 1_000, batchSize: 100, flushIntervalMs: 5, metrics: { registry } });
    // Let the first batch go in flight (and stall) before the rest of the flood.
    for (let i = 0; i < 100; i++) writer.sink(logRecord());
    await eventually(() => writer.stats().queued === 0, 'the first batch to be taken', { timeoutMs: 10_000 });
    for (let i = 0; i < 100_000; i++) writer.sink(logRecord());
    // The batch being written counts against the bound too: 100 in flight + 900 queued.
    assert.equal(writer.stats().queued, 900);
    assert.equal(writer.stats().dropped.queueFull, 99_100);
    assert.equal(await metricValue(registry, 'aigateway_request_log_dropped_total', { reason: 'queue_full' }), 99_100);
    assert.equal(await metricValue(registry, 'aigateway_request_log_queue_depth'), 900);
    release();
    await writer.flush();
    assert.equal(batches.flat().length, 1_000);
    assert.equal(await metricValue(registry, 'aigateway_request_log_written_total'), 1_000);
    await writer.close();
  });

  test('failed writes are counted and logged (throttled), the records dropped, and later batches still land', async () => {
    let failing = true;
    const { store, batches } = scriptedStore({ fail: () => failing });
    const registry = new Registry();
    const logged: Array<Record<string, unknown>> = [];
    const writer = createRequestLogWriter(store, {
      batchSize: 2,
      flushIntervalMs: 60_000,
      metrics: { registry },
      logger: { error: (object) => logged.push(object as Record<string, unknown>) },
    });
    for (let i = 0; i < 6; i++) writer.sink(logRecord());
    await writer.flush();
    assert.equal(writer.stats().failedBatches, 3);
    assert.equal(writer.stats().dropped.writeFailed, 6);
    assert.equal(await metricValue(registry, 'aigateway_request_log_write_errors_total'), 3);
    assert.equal(await metricValue(registry, 'aigateway_request_log_dropped_total', { reason: 'write_failed' }), 6);
    assert.equal(logged.length, 1, 'one log line per interval, not one per failed batch');

    failing = false;
    const survivor = logRecord();
    writer.sink(survivor);
    await writer.flush();
    assert.deepEqual(batches, [[survivor]]);
    await writer.close();
  });

  test('an unreachable store keeps the records and retries; only a full queue drops (counted); all kept land in order when it returns', async () => {
    let down = true;
    const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { store, batches } = scriptedStore({ failWith: () => (down ? refused() : undefined) });
    const registry = new Registry();
    const writer = createRequestLogWriter(store, { maxQueue: 10, batchSize: 4, flushIntervalMs: 5, retryMinMs: 1, retryMaxMs: 4, metrics: { registry } });
    const kept = Array.from({ length: 10 }, () => logRecord());
    for (const record of kept) writer.sink(record);
    for (let i = 0; i < 5; i++) writer.sink(logRecord());
    await eventually(() => writer.stats().retriedBatches >= 3, 'several retries while the store is down', { timeoutMs: 10_000 });
    assert.equal(writer.stats().dropped.queueFull, 5);
    assert.equal(writer.stats().dropped.writeFailed, 0, 'nothing kept is given up while the store is unreachable');
    assert.equal(await metricValue(registry, 'aigateway_request_log_dropped_total', { reason: 'queue_full' }), 5);
    assert.equal(batches.length, 0);
    down = false;
    await eventually(() => batches.flat().length === 10, 'the kept records to be written', { timeoutMs: 10_000 });
    assert.deepEqual(batches.flat(), kept);
    assert.equal(writer.stats().written, 10);
    await writer.close();
  });

  test('unreachable-store errors are retried; errors about the records are not', () => {
    for (const error of [
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })], 'all addresses failed'),
    ]) {
      assert.equal(isTransientStoreError(error), true, error.message);
    }
    for (const error of [Object.assign(new Error('invalid input syntax'), { code: '22P02' }), new Error('database is down'), 'ECONNREFUSED', null]) {
      assert.equal(isTransientStoreError(error), false, String(error));
    }
  });

  test('close flushes what is queued, then drops (and counts) late records', async () => {
    const { store, batches } = scriptedStore();
    const registry = new Registry();
    const writer = createRequestLogWriter(store, { batchSize: 50, flushIntervalMs: 60_000, metrics: { registry } });
    writer.sink(logRecord());
    await writer.close();
    assert.equal(batches.flat().length, 1);
    writer.sink(logRecord());
    assert.equal(writer.stats().dropped.closed, 1);
    assert.equal(await metricValue(registry, 'aigateway_request_log_dropped_total', { reason: 'closed' }), 1);
    await writer.close();
  });

  // The store never settles: only close's own deadline can end the wait.
  test('close gives up on a hung store after its deadline, counting what was left as dropped', { timeout: 10_000 }, async () => {
    const { store } = scriptedStore({ gate: new Promise<void>(() => undefined) });
    const writer = createRequestLogWriter(store, { batchSize: 2, flushIntervalMs: 60_000 });
    for (let i = 0; i < 5; i++) writer.sink(logRecord());
    await writer.close({ timeoutMs: 50 });
    // One batch of 2 is stuck in the store; the 3 still queued are dropped.
    assert.equal(writer.stats().dropped.closed, 3);
    assert.equal(writer.stats().queued, 0);
  });

  test('two writers on one registry share its series instead of failing to register', async () => {
    const registry = new Registry();
    const a = createRequestLogWriter(scriptedStore().store, { metrics: { registry } });
    const b = createRequestLogWriter(scriptedStore().store, { metrics: { registry } });
    await Promise.all([a.close(), b.close()]);
  });
});

describe('request log retention', () => {
  test('deletes records older than the retention on each pass', async () => {
    const { store, deletes } = scriptedStore();
    const retention = startLogRetention(store, { retentionMs: 86_400_000, intervalMs: 10, firstPassDelayMs: 0, now: () => 100 * 86_400_000 });
    await eventually(() => deletes.length >= 2, 'two retention passes', { timeoutMs: 10_000 });
    await retention.stop();
    assert.ok(deletes.every((cutoff) => cutoff === 99 * 86_400_000));
    assert.equal(await retention.runOnce(), 3);
  });

  test('a store partitioned by day is asked for its own cutoff (whole days), never a later one', async () => {
    const { store, deletes } = scriptedStore();
    const day = 86_400_000;
    const partitioned = { ...store, retentionCutoff: (cutoff: number) => Math.floor(cutoff / day) * day };
    const retention = startLogRetention(partitioned, { retentionMs: 30 * day, firstPassDelayMs: 60_000, now: () => 100 * day + 5_000 });
    await retention.runOnce();
    await retention.stop();
    assert.deepEqual(deletes, [70 * day]);
  });

  test('a failing pass is logged and the schedule goes on', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const store = {
      ...scriptedStore().store,
      deleteOlderThan: async () => {
        calls++;
        throw new Error('busy');
      },
    };
    const retention = startLogRetention(store, {
      retentionMs: 1_000,
      intervalMs: 10,
      firstPassDelayMs: 0,
      logger: { info: () => undefined, error: (object) => errors.push(object) },
    });
    await eventually(() => calls >= 2, 'a second pass after a failure', { timeoutMs: 10_000 });
    await retention.stop();
    assert.ok(errors.length >= 1);
  });
});
