// The shared suite on the real PostgreSQL (DATABASE_URL, default postgres@127.0.0.1:5432/test):
// each run works in its own schema, each test in its own table, and drops the schema after.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { SqlLogStore } from '../../../proxy/logs/sql-log-store.ts';
import { PostgresDriver } from '../../../proxy/sql/postgres-driver.ts';
import { logRecord, requestLogStoreSuite } from './request-log-store-suite.ts';

const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `aigw_logs_test_${process.pid}_${randomBytes(4).toString('hex')}`;

const admin = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3_000 });
admin.on('error', () => undefined);
const reachable = await admin.connect().then(() => true, () => false);
const skip = reachable ? false : `PostgreSQL not reachable at ${DATABASE_URL}`;
if (reachable) await admin.query(`CREATE SCHEMA ${SCHEMA}`);

after(async () => {
  if (!reachable) return;
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.end();
});

let tables = 0;
const freshTable = (): string => `${SCHEMA}.logs_${++tables}`;

if (reachable) requestLogStoreSuite('postgres', () => SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table: freshTable() }));

/** The table an earlier release created: not partitioned, keyed by id, without the later columns. */
async function legacyTable(): Promise<string> {
  const table = freshTable();
  await admin.query(`CREATE TABLE ${table} (id text COLLATE "C" NOT NULL PRIMARY KEY, trace_id text NOT NULL, started_at timestamptz NOT NULL,
    method text NOT NULL, route text NOT NULL, status int NOT NULL, latency_ms float8 NOT NULL, ttft_ms float8, api_key_id text, workspace text,
    config_id text, target_path text, provider text, model text, metadata jsonb, metadata_flat jsonb, prompt_tokens bigint, completion_tokens bigint,
    total_tokens bigint, cache_status text, retries int NOT NULL, guardrail_verdict text, error_code text)`);
  return table;
}

// An existing database keeps working: the whole contract on a table from before partitioning.
if (reachable) {
  requestLogStoreSuite('postgres (unpartitioned table of an earlier release)', async () =>
    SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table: await legacyTable() }),
  );
}

describe('postgres request log store: the shared table', { skip }, () => {
  test('replicas opening the same table at once all succeed and share the records', async () => {
    const table = freshTable();
    const stores = await Promise.all(Array.from({ length: 4 }, () => SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table })));
    try {
      const record = logRecord();
      await stores[0]?.insertMany([record]);
      assert.deepEqual(await stores[3]?.get(record.id), record);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  test('started_at is a timestamptz and metadata is jsonb, for plain SQL', async () => {
    const table = freshTable();
    const store = await SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table });
    try {
      await store.insertMany([logRecord({ startedAt: Date.UTC(2025, 5, 1, 12, 0, 0, 123), metadata: { user: 'u1' } })]);
      const { rows } = await admin.query(`SELECT started_at, metadata->>'user' AS user FROM ${table}`);
      assert.deepEqual(rows, [{ started_at: new Date(Date.UTC(2025, 5, 1, 12, 0, 0, 123)), user: 'u1' }]);
    } finally {
      await store.close();
    }
  });

  test('a table from before model_requested and attempts gets them on open (attempts as jsonb)', async () => {
    const table = freshTable();
    await admin.query(`CREATE TABLE ${table} (id text COLLATE "C" NOT NULL PRIMARY KEY, trace_id text NOT NULL, started_at timestamptz NOT NULL,
      method text NOT NULL, route text NOT NULL, status int NOT NULL, latency_ms float8 NOT NULL, ttft_ms float8, api_key_id text, workspace text,
      config_id text, target_path text, provider text, model text, metadata jsonb, metadata_flat jsonb, prompt_tokens bigint, completion_tokens bigint,
      total_tokens bigint, cache_status text, retries int NOT NULL, guardrail_verdict text, error_code text, cached_tokens bigint, reasoning_tokens bigint,
      usage_estimated bigint, cost_usd float8, otel_trace_id text)`);
    const store = await SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table });
    try {
      const record = logRecord({ modelRequested: 'asked', attempts: [{ target: 'config.targets[1]', provider: 'openai', model: 'm', status: 502, durationMs: 3.25, errorCode: 'AIGW_ERR_UPSTREAM_UNREACHABLE' }] });
      await store.insertMany([record]);
      assert.deepEqual(await store.get(record.id), record);
      const { rows } = await admin.query(`SELECT attempts->0->>'status' AS status, jsonb_typeof(attempts) AS type FROM ${table}`);
      assert.deepEqual(rows, [{ status: '502', type: 'array' }]);
    } finally {
      await store.close();
    }
  });

  test('a new table is partitioned by day: records land in their day, retention drops whole days', async () => {
    const table = freshTable();
    const day = 86_400_000;
    const now = Date.UTC(2026, 2, 10, 15, 30);
    const store = await SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table, now: () => now });
    try {
      assert.equal(store.partitioned, true);
      const partitions = async (): Promise<string[]> =>
        (
          await admin.query(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, [table])
        ).rows.map((row: { relname: string }) => row.relname);
      const name = table.split('.')[1];
      assert.deepEqual(await partitions(), [`${name}_default`, ...['20260309', '20260310', '20260311', '20260312', '20260313'].map((tag) => `${name}_p${tag}`)]);
      const yesterday = logRecord({ startedAt: now - day });
      const today = logRecord({ startedAt: now });
      const old = logRecord({ startedAt: now - 40 * day });
      await store.insertMany([yesterday, today, old]);
      const where = await admin.query(`SELECT id, tableoid::regclass::text AS part FROM ${table} ORDER BY started_at`);
      assert.deepEqual(
        where.rows.map((row: { part: string }) => row.part.split('.').at(-1)),
        [`${name}_default`, `${name}_p20260309`, `${name}_p20260310`],
      );
      // Retention asks for whole days: a cutoff inside today keeps all of today.
      const cutoff = store.retentionCutoff(now - 1_000);
      assert.equal(cutoff, Date.UTC(2026, 2, 10));
      assert.equal(await store.deleteOlderThan(cutoff), 2);
      assert.equal((await partitions()).includes(`${name}_p20260309`), false, "yesterday's partition is dropped, not emptied");
      assert.deepEqual((await store.query({}, undefined, 10)).records.map((record) => record.id), [today.id]);
      // The same record written twice (a retried batch) is still stored once.
      await store.insertMany([today]);
      assert.equal((await store.summary({}, undefined)).total.requests, 1);
    } finally {
      await store.close();
    }
  });

  test('partitions follow the clock: the coming days are made when the day turns', async () => {
    const table = freshTable();
    let now = Date.UTC(2026, 2, 10, 12);
    const store = await SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table, now: () => now });
    try {
      now += 10 * 86_400_000;
      await store.ensurePartitions();
      const record = logRecord({ startedAt: now });
      await store.insertMany([record]);
      const { rows } = await admin.query(`SELECT tableoid::regclass::text AS part FROM ${table}`);
      assert.equal(rows[0]?.part.split('.').at(-1), `${table.split('.')[1]}_p20260320`);
    } finally {
      await store.close();
    }
  });

  test('a table from an earlier release (not partitioned) keeps working: inserts, reads, row-by-row retention', async () => {
    const store = await SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table: await legacyTable() });
    try {
      assert.equal(store.partitioned, false);
      assert.equal(store.retentionCutoff(12_345), 12_345);
      const first = logRecord({ startedAt: 1_000 });
      const second = logRecord({ startedAt: 5_000 });
      await store.insertMany([first, second]);
      await store.insertMany([{ ...first, model: 'again' }]);
      assert.equal((await store.get(first.id))?.model, first.model);
      assert.equal(await store.deleteOlderThan(2_000), 1);
      assert.deepEqual((await store.query({}, undefined, 10)).records.map((record) => record.id), [second.id]);
    } finally {
      await store.close();
    }
  });

  test('a table name that is not a plain identifier is refused before any SQL', async () => {
    await assert.rejects(SqlLogStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), { table: 'logs; DROP TABLE x' }), RangeError);
  });

  test('an unreachable database rejects open (no endless retry)', { timeout: 20_000 }, async () => {
    await assert.rejects(SqlLogStore.open(new PostgresDriver({ connectionString: 'postgres://postgres@127.0.0.1:1/test' })));
  });
});
