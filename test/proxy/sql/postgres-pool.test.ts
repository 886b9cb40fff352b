// One pg.Pool per database URL: the batch/file driver and the PostgreSQL log store on the
// same DATABASE_URL share it, one closing leaves the other working, the last one ends it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { SqlLogStore } from '../../../proxy/logs/sql-log-store.ts';
import { PostgresDriver } from '../../../proxy/sql/postgres-driver.ts';
import { leasePostgresPool } from '../../../proxy/sql/postgres-pool.ts';
import { adminQuery, postgresBackend, POSTGRES_URL } from '../../batches/store-backends.ts';

const backend = await postgresBackend();
const skip = backend.unavailable ?? false;
const schema = `aigw_test_${randomBytes(6).toString('hex')}`;
const url = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;

before(async () => {
  if (!skip) await adminQuery(`CREATE SCHEMA ${schema}`);
});
after(async () => {
  if (!skip) await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
});

test('leases of one URL get one pool; the last release ends it', { skip }, async () => {
  const first = leasePostgresPool(url);
  const second = leasePostgresPool(url);
  assert.equal(first.pool, second.pool);
  await first.release();
  await first.release(); // idempotent: must not end the pool under the second lease
  assert.equal(second.pool.ended, false);
  assert.deepEqual((await second.pool.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  await second.release();
  assert.equal(second.pool.ended, true);
  const third = leasePostgresPool(url);
  assert.notEqual(third.pool, first.pool, 'a lease after the last release gets a new pool');
  await third.release();
});

test('the driver and the log store share the pool; each close only releases its lease', { skip }, async () => {
  const driver = new PostgresDriver({ connectionString: url });
  const logs = await SqlLogStore.open(new PostgresDriver({ connectionString: url }));
  const probe = leasePostgresPool(url);
  try {
    await logs.close();
    assert.deepEqual(await driver.query('SELECT 2 AS two'), [{ two: 2 }], 'the driver still works after the log store closed');
    await driver.close();
    await assert.rejects(driver.query('SELECT 1'), /closed/);
    assert.equal(probe.pool.ended, false, 'a user still holds the pool');
  } finally {
    await probe.release();
  }
  assert.equal(probe.pool.ended, true);
});
