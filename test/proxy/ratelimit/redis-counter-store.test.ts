// Runs the shared suite against the real Redis (REDIS_URL, default 127.0.0.1:6379), plus
// what only a shared store must do: one limit across processes, and failing fast.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { PREFIX, REDIS_URL, admin, cuttableProxy, reachable, rejection, silentServer, skip } from '../../helpers/redis-test-kit.ts';
import { type RateLimitCounterStore } from '../../../proxy/ratelimit/counter-store.ts';
import { RedisCounterStore } from '../../../proxy/ratelimit/redis-counter-store.ts';
import { counterStoreSuite } from './counter-store-suite.ts';
import { eventually } from '../../helpers/eventually.ts';

const MINUTE = 60_000;
const T0 = 20_000 * 86_400_000;

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

  test('an unreachable Redis rejects every call with AIGW_ERR_STORE_UNAVAILABLE', { timeout: 10_000 }, async () => {
    const s = store({ url: 'redis://:s3cret-pass@127.0.0.1:1', commandTimeoutMs: 50 });
    const spec = { key: 'rl:down', windowMs: MINUTE, limit: 5 };
    for (const call of [() => s.consume(spec, 1, T0), () => s.peek(spec, T0), () => s.add(spec, 1, T0), () => s.consume(spec, 1, T0)]) {
      const error = await rejection(call);
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
      assert.doesNotMatch(error.message, /s3cret/);
    }
  });

  test('a Redis that accepts but never answers: only the command timeout can answer, and it rejects', { timeout: 10_000 }, async (t) => {
    const silent = await silentServer();
    t.after(() => silent.close());
    const s = store({ url: silent.url, commandTimeoutMs: 50 });
    const spec = { key: 'rl:silent', windowMs: MINUTE, limit: 5 };
    const calls = await Promise.all(Array.from({ length: 20 }, () => rejection(() => s.consume(spec, 1, T0))));
    for (const error of calls) {
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    }
  });

  test('after Redis comes back the store recovers by itself', async (t) => {
    const proxy = await cuttableProxy();
    t.after(() => proxy.cut().catch(() => {}));
    const s = store({ url: proxy.url, commandTimeoutMs: 100 });
    const spec = { key: `rl:recover:${randomUUID()}`, windowMs: MINUTE, limit: 5 };
    assert.equal((await s.consume(spec, 1, T0)).used, 1);

    await proxy.cut();
    const error = await rejection(() => s.consume(spec, 1, T0));
    assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');

    await proxy.restore();
    // Reconnection runs on ioredis's backoff timer: poll until a call succeeds.
    const used = (await eventually(() => s.consume(spec, 1, T0), 'the store to recover', { timeoutMs: 10_000 })).used;
    // Nothing was counted while Redis was cut off, and nothing counted twice.
    assert.equal(used, 2);
  });

  test('a closed store rejects with AIGW_ERR_STORE_UNAVAILABLE', async () => {
    const s: RateLimitCounterStore = store();
    await s.close();
    const error = await rejection(() => s.peek({ key: 'rl:closed', windowMs: MINUTE, limit: 1 }, T0));
    assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
  });
});
