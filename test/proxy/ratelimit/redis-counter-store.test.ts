// Runs the shared suite against the real Redis (REDIS_URL, default 127.0.0.1:6379), plus
// what only a shared store must do: one limit across processes, and failing fast.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { type RateLimitCounterStore } from '../../../proxy/ratelimit/counter-store.ts';
import { RedisCounterStore } from '../../../proxy/ratelimit/redis-counter-store.ts';
import { counterStoreSuite } from './counter-store-suite.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `aigw-test:${process.pid}:${randomUUID()}:`;
const MINUTE = 60_000;
const T0 = 20_000 * 86_400_000;

const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
admin.on('error', () => {});
const reachable = await admin.connect().then(() => true, () => false);
const skip = reachable ? false : `Redis not reachable at ${REDIS_URL}`;

after(async () => {
  if (!reachable) return;
  // Remove everything this run wrote.
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    if (keys.length > 0) await admin.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await admin.quit();
});

const open: RedisCounterStore[] = [];
// Where a test expects answers, a deadline far above the 50 ms default: a loaded CI machine
// can take that long to connect a fresh store. Failure tests set their own.
function store(options: { url?: string; commandTimeoutMs?: number } = {}): RedisCounterStore {
  const s = new RedisCounterStore({ url: options.url ?? REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: options.commandTimeoutMs ?? 2_000 });
  open.push(s);
  return s;
}
after(() => Promise.all(open.map((s) => s.close())));

if (reachable) {
  counterStoreSuite('redis', async () => store());
}

/** Resolves with the rejection and how long it took; fails if `call` resolves. */
async function timedRejection(call: () => Promise<unknown>): Promise<{ error: Error & { code?: unknown }; ms: number }> {
  const start = performance.now();
  try {
    await call();
  } catch (error) {
    assert.ok(error instanceof Error);
    return { error, ms: performance.now() - start };
  }
  assert.fail('expected a rejection');
}

/** A TCP proxy to Redis that can be cut and restored on the same port. */
async function cuttableProxy(target: URL): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
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
  const port = address.port;
  return {
    url: `redis://127.0.0.1:${port}`,
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    async restore() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
  };
}

describe('redis counter store across processes and failures', { skip }, () => {
  test('two stores on two connections share one limit: 50 concurrent consumes, limit 20, admit exactly 20', async () => {
    const a = store();
    const b = store();
    const spec = { key: `rl:shared:${randomUUID()}`, windowMs: MINUTE, limit: 20 };
    const decisions = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).consume(spec, 1, T0)));
    assert.equal(decisions.filter((d) => d.allowed).length, 20);
    assert.equal((await a.peek(spec, T0)).used, 20);
    assert.equal((await b.peek(spec, T0)).used, 20);
  });

  test('a counter is one hash under the prefix, expiring two windows after its last write', async () => {
    const s = store();
    const key = `rl:layout:${randomUUID()}`;
    await s.consume({ key, windowMs: MINUTE, limit: 5 }, 2, T0 + 1_000);
    const redisKey = `${PREFIX}${key}:${MINUTE}`;
    assert.deepEqual(await admin.hgetall(redisKey), { w: String(T0 / MINUTE), p: '0', c: '2' });
    const ttl = await admin.pttl(redisKey);
    assert.ok(ttl > MINUTE && ttl <= 2 * MINUTE, `pttl ${ttl}`);
    // peek writes nothing, so it neither creates nor extends a counter.
    await s.peek({ key: `${key}-peeked`, windowMs: MINUTE, limit: 5 }, T0);
    assert.equal(await admin.exists(`${PREFIX}${key}-peeked:${MINUTE}`), 0);
  });

  test('a flushed script cache is reloaded transparently', async () => {
    const s = store();
    const spec = { key: `rl:flush:${randomUUID()}`, windowMs: MINUTE, limit: 5 };
    await s.consume(spec, 1, T0);
    await admin.script('FLUSH');
    assert.equal((await s.consume(spec, 1, T0)).used, 2);
    assert.equal((await s.peek(spec, T0)).used, 2);
  });

  test('an unreachable Redis rejects every call with AIGW_ERR_STORE_UNAVAILABLE within ~200 ms', async () => {
    const s = store({ url: 'redis://:s3cret-pass@127.0.0.1:1', commandTimeoutMs: 50 });
    const spec = { key: 'rl:down', windowMs: MINUTE, limit: 5 };
    for (const call of [() => s.consume(spec, 1, T0), () => s.peek(spec, T0), () => s.add(spec, 1, T0), () => s.consume(spec, 1, T0)]) {
      const { error, ms } = await timedRejection(call);
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
      assert.ok(ms < 200, `took ${ms} ms`);
      assert.doesNotMatch(error.message, /s3cret/);
    }
  });

  test('a Redis that accepts but never answers rejects within ~200 ms', async (t) => {
    const silent = net.createServer(() => {});
    const held = new Set<net.Socket>();
    silent.on('connection', (socket) => held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const socket of held) socket.destroy();
      silent.close();
    });
    const address = silent.address();
    assert.ok(address !== null && typeof address === 'object');
    const s = store({ url: `redis://127.0.0.1:${address.port}`, commandTimeoutMs: 50 });
    const spec = { key: 'rl:silent', windowMs: MINUTE, limit: 5 };
    const calls = await Promise.all(Array.from({ length: 20 }, () => timedRejection(() => s.consume(spec, 1, T0))));
    for (const { error, ms } of calls) {
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
      assert.ok(ms < 200, `took ${ms} ms`);
    }
  });

  test('after Redis comes back the store recovers by itself', async (t) => {
    const proxy = await cuttableProxy(new URL(REDIS_URL));
    t.after(() => proxy.cut().catch(() => {}));
    const s = store({ url: proxy.url, commandTimeoutMs: 100 });
    const spec = { key: `rl:recover:${randomUUID()}`, windowMs: MINUTE, limit: 5 };
    assert.equal((await s.consume(spec, 1, T0)).used, 1);

    await proxy.cut();
    const { error, ms } = await timedRejection(() => s.consume(spec, 1, T0));
    assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    assert.ok(ms < 300, `took ${ms} ms`);

    await proxy.restore();
    // Poll (reconnection runs on ioredis's backoff timer) up to a deadline.
    const deadline = Date.now() + 5_000;
    let used: number | undefined;
    while (used === undefined) {
      try {
        used = (await s.consume(spec, 1, T0)).used;
      } catch (e) {
        assert.ok(Date.now() < deadline, `not recovered within 5 s: ${String(e)}`);
        await delay(20);
      }
    }
    // Nothing was counted while Redis was cut off, and nothing counted twice.
    assert.equal(used, 2);
  });

  test('a closed store rejects with AIGW_ERR_STORE_UNAVAILABLE', async () => {
    const s: RateLimitCounterStore = store();
    await s.close();
    const { error } = await timedRejection(() => s.peek({ key: 'rl:closed', windowMs: MINUTE, limit: 1 }, T0));
    assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
  });
});
