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

  test('a table from before model_requested and attempts gets them on open; its rows read back as written', async () => {
    const path = freshPath();
    const { DatabaseSync } = await import('node:sqlite');
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE request_logs (id TEXT NOT NULL PRIMARY KEY, trace_id TEXT NOT NULL, started_at INTEGER NOT NULL, method TEXT NOT NULL,
      route TEXT NOT NULL, status INTEGER NOT NULL, latency_ms REAL NOT NULL, ttft_ms REAL, api_key_id TEXT, workspace TEXT, config_id TEXT,
      target_path TEXT, provider TEXT, model TEXT, metadata TEXT, metadata_flat TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
      total_tokens INTEGER, cache_status TEXT, retries INTEGER NOT NULL, guardrail_verdict TEXT, error_code TEXT)`);
    old.exec(`INSERT INTO request_logs (id, trace_id, started_at, method, route, status, latency_ms, retries) VALUES ('old-1', 't', 1, 'POST', '/v1/chat/completions', 200, 5, 0)`);
    old.close();
    const store = await SqliteLogStore.open({ path });
    try {
      const before = await store.get('old-1');
      assert.equal(before?.modelRequested, undefined);
      assert.equal(before?.attempts, undefined);
      const record = logRecord({ modelRequested: 'asked', attempts: [{ target: 'config', provider: 'openai', model: 'm', status: 200, durationMs: 1.5, errorCode: undefined }] });
      await store.insertMany([record]);
      assert.deepEqual(await store.get(record.id), record);
    } finally {
      await store.close();
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
