// A PostgreSQL outage between the gateway and its request log: a TCP proxy that can be cut
// (every connection reset, the port refusing) stands between the log store and the real
// PostgreSQL. Requests keep answering 200 while it is cut, the writer's bounded buffer keeps
// what fits and counts what does not, and what it kept is written once the database is back.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { Registry } from 'prom-client';
import { createRequestLogWriter, type RequestLogWriter } from '../../../proxy/logs/request-log-writer.ts';
import { SqlLogStore } from '../../../proxy/logs/sql-log-store.ts';
import { PostgresDriver } from '../../../proxy/sql/postgres-driver.ts';
import { startMockOpenAI, type MockOpenAI } from '../../fixtures/mock-openai.ts';
import { eventually } from '../../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../../helpers/gateway-harness.ts';

const DATABASE_URL = new URL(process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test');
const SCHEMA = `aigw_outage_test_${process.pid}_${randomBytes(4).toString('hex')}`;
const TABLE = `${SCHEMA}.request_logs`;
const MAX_QUEUE = 20;
const BATCH = 5;

const admin = new pg.Client({ connectionString: DATABASE_URL.href, connectionTimeoutMillis: 3_000 });
admin.on('error', () => undefined);
const reachable = await admin.connect().then(() => true, () => false);

/** A TCP proxy to PostgreSQL: cut() resets every connection and closes the port; restore() reopens it. */
async function cuttableProxy(target: URL): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const { port } = address;
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const cut = async (): Promise<void> => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.resetAndDestroy();
    await closed;
  };
  return {
    url: url.href,
    cut,
    async restore() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    close: cut,
  };
}

let mock: MockOpenAI;
let proxy: Awaited<ReturnType<typeof cuttableProxy>>;
let store: SqlLogStore;
let writer: RequestLogWriter;
let harness: Harness;
const registry = new Registry();

before(async () => {
  if (!reachable) return;
  await admin.query(`CREATE SCHEMA ${SCHEMA}`);
  mock = await startMockOpenAI();
  proxy = await cuttableProxy(DATABASE_URL);
  store = await SqlLogStore.open(new PostgresDriver({ connectionString: proxy.url }), { table: TABLE });
  writer = createRequestLogWriter(store, { maxQueue: MAX_QUEUE, batchSize: BATCH, flushIntervalMs: 10, retryMinMs: 5, retryMaxMs: 50, metrics: { registry } });
  harness = await startHarness({
    state: baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-m', customHost: mock.url }], configs: [{ id: 'c', config: { provider: '@mock' } }] }),
    requestSink: writer.sink,
  });
});

after(async () => {
  if (!reachable) return;
  await harness?.close();
  await writer?.close({ timeoutMs: 2_000 });
  await store?.close();
  await proxy?.close();
  await mock?.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.end();
});

async function chat(trace: string): Promise<number> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'c', 'x-gateway-trace-id': trace },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: trace }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function storedTraces(): Promise<Set<string>> {
  const { rows } = await admin.query(`SELECT trace_id FROM ${TABLE}`);
  return new Set(rows.map((row: { trace_id: string }) => row.trace_id));
}

async function droppedMetric(reason: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'aigateway_request_log_dropped_total');
  return metric?.values.find((v) => v.labels['reason'] === reason)?.value ?? 0;
}

describe('request log: PostgreSQL cut off and back', { skip: reachable ? false : `PostgreSQL not reachable at ${DATABASE_URL.href}` }, () => {
  test('requests answer 200 throughout; the buffer keeps what fits, counts the drops, and writes what it kept once PostgreSQL is back', async () => {
    for (let i = 0; i < 3; i++) assert.equal(await chat(`before-${i}`), 200);
    await eventually(async () => (await storedTraces()).size === 3, 'the records before the outage', { timeoutMs: 10_000 });

    await proxy.cut();
    const during = Array.from({ length: 40 }, (_, i) => `during-${i}`);
    for (const trace of during) assert.equal(await chat(trace), 200, 'a request while PostgreSQL is unreachable');
    // Every record is accounted for: queued (kept for the retry) or dropped, never lost silently.
    await eventually(() => writer.stats().retriedBatches >= 1 && writer.stats().dropped.queueFull + writer.stats().queued === during.length, 'the outage to be noticed', {
      timeoutMs: 15_000,
    });
    const { queued, dropped } = writer.stats();
    assert.equal(queued, MAX_QUEUE, 'the buffer is full, and no larger');
    assert.equal(dropped.queueFull, during.length - MAX_QUEUE);
    assert.equal(dropped.writeFailed, 0);
    assert.equal(await droppedMetric('queue_full'), during.length - MAX_QUEUE);

    await proxy.restore();
    const kept = await eventually(
      async () => {
        const traces = await storedTraces();
        return writer.stats().queued === 0 && traces.size === 3 + MAX_QUEUE ? traces : undefined;
      },
      'the kept records to be written after PostgreSQL came back',
      { timeoutMs: 20_000 },
    );
    // The buffer kept the oldest records of the outage (the newest were the ones dropped).
    for (const trace of during.slice(0, MAX_QUEUE)) assert.ok(kept.has(trace), `${trace} written after the outage`);
    assert.equal(await chat('after'), 200);
    await eventually(async () => (await storedTraces()).has('after'), 'a record after the outage', { timeoutMs: 10_000 });
  });
});
