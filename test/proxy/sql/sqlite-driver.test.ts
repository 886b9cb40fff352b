// The SQLite driver's batch run (the request log's inserts): all rows in one transaction, or none.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SqliteDriver } from '../../../proxy/sql/sqlite-driver.ts';

const dir = await mkdtemp(join(tmpdir(), 'aigw-sqlite-driver-'));
after(() => rm(dir, { recursive: true, force: true }));

const open = async (name: string): Promise<SqliteDriver> => {
  const driver = new SqliteDriver(join(dir, name), {});
  await driver.exec('CREATE TABLE t (id TEXT NOT NULL PRIMARY KEY, n INTEGER NOT NULL)');
  return driver;
};
// node:sqlite rows have a null prototype: compared as plain objects.
const plain = (rows: object[]): object[] => rows.map((row) => ({ ...row }));
const INSERT = 'INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING';

test('runBatch inserts every row, a conflicting one skipped, and the rows stay after a reopen', async () => {
  const path = 'batch.sqlite';
  const driver = await open(path);
  await driver.runBatch(INSERT, [['a', 1], ['b', 2], ['a', 3]]);
  assert.deepEqual(plain(await driver.query('SELECT id, n FROM t ORDER BY id')), [{ id: 'a', n: 1 }, { id: 'b', n: 2 }]);
  await driver.close();
  const again = new SqliteDriver(join(dir, path), {});
  assert.deepEqual(plain(await again.query('SELECT count(*) AS n FROM t')), [{ n: 2 }]);
  await again.close();
});

test('a row that fails rolls the whole batch back; the driver goes on working', async () => {
  const driver = await open('rollback.sqlite');
  await assert.rejects(driver.runBatch(INSERT, [['c', 1], ['d', null]]), /NOT NULL/);
  assert.deepEqual(plain(await driver.query('SELECT count(*) AS n FROM t')), [{ n: 0 }]);
  await driver.runBatch(INSERT, [['e', 5]]);
  // A transaction after it opens and commits as usual (no transaction was left open).
  await driver.transaction(async (tx) => tx.query(INSERT, ['f', 6]));
  assert.deepEqual(plain(await driver.query('SELECT id FROM t ORDER BY id')), [{ id: 'e' }, { id: 'f' }]);
  await driver.close();
});

test('statements queued around a batch run in call order, never inside it', async () => {
  const driver = await open('order.sqlite');
  const seen: number[] = [];
  const before = driver.query('SELECT count(*) AS n FROM t').then(([row]) => seen.push(Number(row?.['n'])));
  const batch = driver.runBatch(INSERT, [['g', 1], ['h', 2]]);
  const afterBatch = driver.query('SELECT count(*) AS n FROM t').then(([row]) => seen.push(Number(row?.['n'])));
  await Promise.all([before, batch, afterBatch]);
  assert.deepEqual(seen, [0, 2]);
  await driver.close();
});
