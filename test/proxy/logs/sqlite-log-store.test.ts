// The shared suite on SQLite (in its worker thread), plus what only the file store must do.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SqliteLogStore } from '../../../proxy/logs/sqlite-log-store.ts';
import { logRecord, requestLogStoreSuite } from './request-log-store-suite.ts';

const dir = await mkdtemp(join(tmpdir(), 'aigw-logs-sqlite-'));
after(() => rm(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = (): string => join(dir, `logs-${++files}.sqlite`);

requestLogStoreSuite('sqlite', () => SqliteLogStore.open({ path: freshPath() }));

describe('sqlite request log store: the file and the thread', () => {
  test('records survive a close and reopen of the same file', async () => {
    const path = freshPath();
    const first = await SqliteLogStore.open({ path });
    const record = logRecord({ metadata: { user: 'u1' } });
    await first.insertMany([record]);
    await first.close();
    const second = await SqliteLogStore.open({ path });
    try {
      assert.deepEqual(await second.get(record.id), record);
    } finally {
      await second.close();
    }
  });

  test('opening a path that is not a database rejects, naming the file', async () => {
    const path = join(dir, 'not-a-directory');
    await writeFile(path, 'plain file');
    await assert.rejects(SqliteLogStore.open({ path: join(path, 'logs.sqlite') }), /cannot open the request log database .*not-a-directory/);
  });

  test('calls after close reject instead of hanging; close is idempotent', async () => {
    const store = await SqliteLogStore.open({ path: freshPath() });
    await store.close();
    await store.close();
    await assert.rejects(store.get('x'), /closed/);
    await assert.rejects(store.insertMany([logRecord()]), /closed/);
  });

  test('calls queued before close are answered', async () => {
    const store = await SqliteLogStore.open({ path: freshPath() });
    const record = logRecord();
    const inserted = store.insertMany([record]);
    const read = store.get(record.id);
    const closed = store.close();
    await inserted;
    assert.deepEqual(await read, record);
    await closed;
  });
});
