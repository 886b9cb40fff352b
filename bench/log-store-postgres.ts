// The PostgreSQL request log store under a busy gateway's load: how many rows a second one
// writer can insert (capacity), and, at a sustained rate through the real writer, how long a
// record waits from the response to its commit (lag), whether the queue stays bounded and
// whether anything is dropped. Also the table's size per row, to size the disk for a day.
//
//   node bench/log-store-postgres.ts [--rate 2000] [--seconds 60] [--prefill 300000] [--batch 500]
//                                    [--database-url postgres://postgres@127.0.0.1:5432/test]
//
// Works in its own schema (dropped at the end); the table is the one the gateway creates
// (partitioned by day, every index). Records look like real ones: metadata, usage, cost and
// one attempt. Prefill first writes --prefill rows so the sustained phase runs on a table
// that is no longer empty (its indexes bigger than a fresh one's).
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SqlLogStore } from '../proxy/logs/sql-log-store.ts';
import { createRequestLogWriter } from '../proxy/logs/request-log-writer.ts';
import type { RequestRecord } from '../proxy/observability/request-record.ts';
import { PostgresDriver } from '../proxy/sql/postgres-driver.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '60' },
    prefill: { type: 'string', default: '300000' },
    batch: { type: 'string', default: '500' },
    'flush-ms': { type: 'string', default: '500' },
    'database-url': { type: 'string', default: process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const prefill = Number(values.prefill);
const batchSize = Number(values.batch);
const flushIntervalMs = Number(values['flush-ms']);
const databaseUrl = values['database-url'];
if (![rate, seconds, batchSize, flushIntervalMs].every((n) => Number.isFinite(n) && n > 0) || !(prefill >= 0)) throw new RangeError('rate, seconds, batch and flush-ms must be positive');

const MODELS = ['gpt-4o-mini', 'gpt-4o', 'claude-3-5-sonnet', 'gemini-1.5-pro'];
const PROVIDERS = ['openai', 'anthropic', 'vertex-ai'];
let sequence = 0;
function record(startedAt: number): RequestRecord {
  sequence++;
  const model = MODELS[sequence % MODELS.length] ?? 'm';
  return {
    id: randomUUID(),
    traceId: randomBytes(16).toString('hex'),
    startedAt,
    method: 'POST',
    route: '/v1/chat/completions',
    status: sequence % 50 === 0 ? 429 : 200,
    latencyMs: 200 + (sequence % 700),
    ttftMs: 80,
    apiKeyId: `key-${sequence % 40}`,
    workspace: `ws-${sequence % 5}`,
    configId: 'prod',
    targetPath: 'config.targets[0]',
    provider: PROVIDERS[sequence % PROVIDERS.length],
    model,
    metadata: { user: `user-${sequence % 1000}`, env: 'prod', feature: 'chat' },
    promptTokens: 350,
    completionTokens: 120,
    totalTokens: 470,
    cacheStatus: sequence % 4 === 0 ? 'HIT' : 'MISS',
    retries: 0,
    guardrailVerdict: undefined,
    errorCode: undefined,
    costUsd: 0.00042,
    modelRequested: model,
    attempts: [{ target: 'config.targets[0]', provider: 'openai', model, status: 200, durationMs: 190.5, errorCode: undefined }],
  };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

const schema = `aigw_bench_${process.pid}`;
const admin = new pg.Client({ connectionString: databaseUrl });
await admin.connect();
await admin.query(`CREATE SCHEMA ${schema}`);
const table = `${schema}.request_logs`;
const store = await SqlLogStore.open(new PostgresDriver({ connectionString: databaseUrl }), { table });
const out: Record<string, unknown> = { rate, seconds, batchSize, flushIntervalMs, partitioned: store.partitioned };

try {
  // 1. Capacity: back-to-back batches, one insert in flight (as the writer does).
  if (prefill > 0) {
    const now = Date.now();
    // Made batch by batch (a few µs a record, inside the timing): millions held at once would not fit.
    const batches = function* (): Generator<RequestRecord[]> {
      for (let at = 0; at < prefill; at += batchSize) yield Array.from({ length: Math.min(batchSize, prefill - at) }, (_, i) => record(now - 3_600_000 + at + i));
    };
    const insertMs: number[] = [];
    // Rows/s per stretch of 250,000 rows: does the rate fall as the table and its indexes grow?
    const bySize: Array<{ upToRows: number; rowsPerSecond: number }> = [];
    const started = performance.now();
    let stretchStart = started;
    let stretchRows = 0;
    let done = 0;
    for (const batch of batches()) {
      const t = performance.now();
      await store.insertMany(batch);
      insertMs.push(performance.now() - t);
      done += batch.length;
      stretchRows += batch.length;
      if (stretchRows >= 250_000 || done === prefill) {
        const now = performance.now();
        bySize.push({ upToRows: done, rowsPerSecond: Math.round(stretchRows / ((now - stretchStart) / 1000)) });
        stretchStart = now;
        stretchRows = 0;
      }
    }
    const elapsed = (performance.now() - started) / 1000;
    insertMs.sort((a, b) => a - b);
    out['capacity'] = {
      rows: prefill,
      rowsPerSecond: Math.round(prefill / elapsed),
      batchInsertMsP50: Number(percentile(insertMs, 50).toFixed(1)),
      batchInsertMsP99: Number(percentile(insertMs, 99).toFixed(1)),
      bySize,
    };
  }

  // 2. Sustained rate through the writer: lag = commit time - time the record was handed over.
  const handedAt = new Map<string, number>();
  const lags: number[] = [];
  // Lag per minute of the run (by hand-over time): does the writer fall behind as the table grows?
  const lagsByMinute: number[][] = [];
  let maxQueued = 0;
  const timedStore = {
    insertMany: async (records: readonly RequestRecord[]) => {
      await store.insertMany(records);
      const now = performance.now();
      for (const r of records) {
        const at = handedAt.get(r.id);
        if (at !== undefined) {
          lags.push(now - at);
          (lagsByMinute[Math.floor((at - started) / 60_000)] ??= []).push(now - at);
          handedAt.delete(r.id);
        }
      }
    },
    query: store.query.bind(store),
    get: store.get.bind(store),
    summary: store.summary.bind(store),
    deleteOlderThan: store.deleteOlderThan.bind(store),
    close: async () => undefined,
  };
  // The gateway's PostgreSQL writer settings (request-logging.ts), unless overridden.
  const writer = createRequestLogWriter(timedStore, { batchSize, flushIntervalMs, maxQueue: 60_000 });
  const total = rate * seconds;
  const started = performance.now();
  let sent = 0;
  // Open loop: every 10 ms, hand over as many records as the schedule says are due.
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
      for (; sent < due; sent++) {
        const r = record(Date.now());
        handedAt.set(r.id, performance.now());
        writer.sink(r);
      }
      maxQueued = Math.max(maxQueued, writer.stats().queued);
      if (sent >= total) {
        clearInterval(tick);
        resolve();
      }
    }, 10);
  });
  await writer.flush();
  const elapsed = (performance.now() - started) / 1000;
  await writer.close();
  lags.sort((a, b) => a - b);
  const stats = writer.stats();
  out['sustained'] = {
    records: total,
    achievedPerSecond: Math.round(total / elapsed),
    written: stats.written,
    dropped: stats.dropped,
    maxQueued,
    lagMsP50: Math.round(percentile(lags, 50)),
    lagMsP99: Math.round(percentile(lags, 99)),
    lagMsMax: Math.round(lags.at(-1) ?? Number.NaN),
    lagMsByMinute: lagsByMinute.map((minute) => {
      minute.sort((a, b) => a - b);
      return { p50: Math.round(percentile(minute, 50)), p99: Math.round(percentile(minute, 99)) };
    }),
  };

  // 3. Size on disk: table, its partitions and every index, per row.
  const { rows } = await admin.query(
    `SELECT sum(pg_total_relation_size(c.oid))::float8 AS bytes FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`,
    [table],
  );
  const storedRows = prefill + total;
  const bytes = Number(rows[0]?.bytes ?? 0) || Number((await admin.query(`SELECT pg_total_relation_size($1::regclass)::float8 AS bytes`, [table])).rows[0]?.bytes);
  const perRow = bytes / storedRows;
  out['size'] = {
    rows: storedRows,
    bytesPerRow: Math.round(perRow),
    gbPerHourAt2000: Number(((perRow * 2000 * 3600) / 1e9).toFixed(2)),
    gbPerDayAt2000: Number(((perRow * 2000 * 86_400) / 1e9).toFixed(1)),
  };
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
}
console.log(JSON.stringify(out, null, 2));
