// The store of captured headers and bodies (serve --log-bodies) on both databases: what is
// added is read back by the record's id after a flush, a full queue drops (counted) instead
// of growing, and retention deletes by the request's start.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { ExchangeStore, type StoredExchange } from '../../../proxy/logs/exchange-store.ts';
import { PostgresDriver } from '../../../proxy/sql/postgres-driver.ts';
import { SqliteDriver } from '../../../proxy/sql/sqlite-driver.ts';

const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `aigw_exchanges_test_${process.pid}_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3_000 });
admin.on('error', () => undefined);
const reachable = await admin.connect().then(() => true, () => false);
if (reachable) await admin.query(`CREATE SCHEMA ${SCHEMA}`);
const dir = await mkdtemp(join(tmpdir(), 'aigw-exchange-store-'));

after(async () => {
  if (reachable) {
    await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await admin.end();
  }
  await rm(dir, { recursive: true, force: true });
});

const exchange = (id: string, startedAt: number, text = 'hello'): StoredExchange => ({
  id,
  startedAt,
  requestHeaders: { 'content-type': 'application/json', 'x-gateway-api-key': '[redacted]' },
  requestBody: { text, bytes: text.length, truncated: false },
  responseHeaders: { 'content-type': 'application/json' },
  responseBody: undefined,
});

let tables = 0;
const stores: Array<[string, () => Promise<ExchangeStore>, string | false]> = [
  ['sqlite', () => ExchangeStore.open(new SqliteDriver(join(dir, `x-${randomBytes(3).toString('hex')}.sqlite`), { secureDelete: true }), pino({ level: 'silent' })), false],
  ['postgres', () => ExchangeStore.open(new PostgresDriver({ connectionString: DATABASE_URL }), pino({ level: 'silent' }), { table: `${SCHEMA}.exchanges_${++tables}` }), reachable ? false : `PostgreSQL not reachable at ${DATABASE_URL}`],
];

for (const [name, open, skip] of stores) {
  describe(`ExchangeStore on ${name}`, { skip }, () => {
    test('an added exchange is read back by id after a flush; an unknown id is undefined', async () => {
      const store = await open();
      try {
        store.add(exchange('rec-1', 1_000, 'é'.repeat(10)));
        await store.flush();
        const read = await store.get('rec-1');
        assert.equal(read?.startedAt, 1_000);
        assert.equal(read?.requestBody?.text, 'é'.repeat(10));
        assert.equal(read?.requestHeaders['x-gateway-api-key'], '[redacted]');
        assert.equal(read?.responseBody, undefined);
        assert.equal(await store.get('no-such-record'), undefined);
        store.add(exchange('rec-1', 1_000, 'again'));
        await store.flush();
        assert.equal((await store.get('rec-1'))?.requestBody?.text, 'é'.repeat(10), 'a repeated id is skipped');
      } finally {
        await store.close();
      }
    });

    test('retention deletes by the request start; a full queue drops and counts instead of growing', async () => {
      const store = await open();
      try {
        for (let index = 0; index < 10; index++) store.add(exchange(`old-${index}`, 1_000 + index));
        store.add(exchange('new', 1_000_000));
        await store.flush();
        assert.equal(await store.deleteOlderThan(100_000), 10);
        assert.ok((await store.get('new')) !== undefined);
        // A burst faster than the writer: every exchange is either written or counted as dropped.
        for (let index = 0; index < 6_000; index++) store.add(exchange(`burst-${index}`, 2_000_000));
        await store.flush();
        const written = (await store.deleteOlderThan(3_000_000)) - 1; // 'new' goes too
        assert.equal(written + store.dropped, 6_000);
      } finally {
        await store.close();
      }
    });
  });
}
