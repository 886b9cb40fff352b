// Store outages with the real servers on loopback: Redis (rate-limit counters, cache) and
// PostgreSQL (request logs) are stopped and restarted mid-run. The gateway keeps serving
// with its documented degradation and recovers by itself.
import assert from 'node:assert/strict';
import { execFileSync, execSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { RedisResponseCache } from '../../proxy/cache/redis-response-cache.ts';
import { SqlLogStore } from '../../proxy/logs/sql-log-store.ts';
import { PostgresDriver } from '../../proxy/sql/postgres-driver.ts';
import { createRequestLogWriter } from '../../proxy/logs/request-log-writer.ts';
import { RedisCounterStore } from '../../proxy/ratelimit/redis-counter-store.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
const canManage = process.getuid?.() === 0 && commandExists('redis-server') && commandExists('pg_ctlcluster');

function commandExists(name: string): boolean {
  try {
    execSync(`command -v ${name}`, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function redis(action: 'stop' | 'start'): void {
  if (action === 'stop') execFileSync('redis-cli', ['-p', '6379', 'shutdown', 'nosave'], { stdio: 'ignore' });
  else
    execSync('redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log', {
      stdio: 'ignore',
    });
}

function postgres(action: 'stop' | 'start'): void {
  const version = readdirSync('/etc/postgresql')[0] ?? '15';
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', action], { stdio: 'ignore' });
}

let mock: MockOpenAI;
before(async () => {
  mock = await startMockOpenAI();
});
after(async () => mock.close());

async function chat(harness: Harness): Promise<number> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'cached' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `q ${Math.random()}` }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function metric(harness: Harness, pattern: RegExp): Promise<number> {
  const match = pattern.exec(await (await fetch(`${harness.gateway.origin}/metrics`)).text());
  return match === null ? 0 : Number(match[1]);
}

describe('store outages', { skip: canManage ? false : 'needs root and the local redis-server / pg_ctlcluster' }, () => {
  test('Redis stopped and restarted: requests keep succeeding (fail-open, cache MISS) and counting resumes', async () => {
    const harness = await startHarness({
      state: baseState({
        providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-m', customHost: mock.url }],
        configs: [{ id: 'cached', config: { provider: '@mock', cache: { mode: 'simple' } } }],
        rateLimitPolicies: [{ id: 'outage', type: 'requests', unit: 'rpm', value: 1_000_000, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] }],
      }),
      counterStore: new RedisCounterStore({ url: REDIS_URL }),
      cacheStore: new RedisResponseCache({ url: REDIS_URL }),
    });
    try {
      for (let i = 0; i < 20; i++) assert.equal(await chat(harness), 200);
      redis('stop');
      const during: number[] = [];
      for (let i = 0; i < 50; i++) during.push(await chat(harness));
      assert.deepEqual([...new Set(during)], [200], 'every request succeeded while Redis was down');
      assert.ok((await metric(harness, /aigateway_ratelimit_decisions_total\{policy="outage",result="error"\} (\d+)/)) >= 50);
      redis('start');
      const allowedBefore = await metric(harness, /aigateway_ratelimit_decisions_total\{policy="outage",result="allowed"\} (\d+)/);
      await eventually(
        async () => {
          assert.equal(await chat(harness), 200);
          return (await metric(harness, /aigateway_ratelimit_decisions_total\{policy="outage",result="allowed"\} (\d+)/)) > allowedBefore;
        },
        'counting to resume after Redis came back',
        { timeoutMs: 15_000 },
      );
    } finally {
      try {
        execFileSync('redis-cli', ['-p', '6379', 'ping'], { stdio: 'ignore' });
      } catch {
        redis('start');
      }
      await harness.close();
    }
  });

  test('PostgreSQL stopped and restarted: requests keep succeeding; the request log resumes writing', async () => {
    const table = `outage_${process.pid}`;
    const store = await SqlLogStore.open(new PostgresDriver({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' }), { table });
    const writer = createRequestLogWriter(store, { flushIntervalMs: 100 });
    const harness = await startHarness({
      state: baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-m', customHost: mock.url }], configs: [{ id: 'cached', config: { provider: '@mock' } }] }),
      requestSink: writer.sink,
    });
    try {
      for (let i = 0; i < 10; i++) assert.equal(await chat(harness), 200);
      await writer.flush();
      postgres('stop');
      for (let i = 0; i < 30; i++) assert.equal(await chat(harness), 200, 'serving without the log database');
      postgres('start');
      const marker = await fetch(`${harness.gateway.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'cached', 'x-gateway-trace-id': `after-outage-${process.pid}` },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'after' }] }),
      });
      await marker.arrayBuffer();
      await eventually(
        async () => {
          await writer.flush().catch(() => undefined);
          const found = await store.query({ traceId: `after-outage-${process.pid}` }, undefined, 10).catch(() => undefined);
          return (found?.records.length ?? 0) > 0;
        },
        'the log writer to recover',
        { timeoutMs: 30_000 },
      );
    } finally {
      try {
        postgres('start');
      } catch {
        // already running
      }
      await harness.close();
      await writer.close();
      await store.close();
      execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', 'test', '-c', `DROP TABLE IF EXISTS ${table}`], { stdio: 'ignore' });
    }
  });
});
