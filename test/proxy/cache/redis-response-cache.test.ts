// Runs the shared suite against the real Redis, plus what only the Redis store must do:
// share entries across replicas, compress large values, and fail fast.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { RedisResponseCache, type RedisResponseCacheOptions } from '../../../proxy/cache/redis-response-cache.ts';
import { PREFIX, REDIS_URL, admin, reachable, silentServer, skip, rejection } from '../../helpers/redis-test-kit.ts';
import { answerOfSize, responseCacheStoreSuite } from './response-cache-store-suite.ts';

const HOUR = 3_600_000;
const open: RedisResponseCache[] = [];
let stores = 0;
// A deadline far above the 100 ms default where a test expects answers: a loaded CI machine
// can take that long to connect a fresh store. Failure tests set their own.
function store(options: Partial<RedisResponseCacheOptions> = {}): RedisResponseCache {
  const s = new RedisResponseCache({ url: REDIS_URL, keyPrefix: `${PREFIX}${++stores}:`, commandTimeoutMs: 2_000, statsRefreshMs: 0, ...options });
  open.push(s);
  return s;
}
after(() => Promise.all(open.map((s) => s.close())));

if (reachable) {
  responseCacheStoreSuite('redis', async (bounds) => store(bounds));
}

describe('redis response cache across replicas and failures', { skip }, () => {
  test('two replicas on one prefix share entries, deletes and stats', async () => {
    const keyPrefix = `${PREFIX}shared:`;
    const a = store({ keyPrefix });
    const b = store({ keyPrefix });
    await a.set('k', { body: 'from a', createdAt: 1 }, HOUR);
    assert.equal((await b.get('k'))?.body, 'from a');
    assert.equal((await b.refreshStats()).entries, 1);
    await b.delete('k');
    assert.equal(await a.get('k'), undefined);
    assert.deepEqual(await a.refreshStats(), { entries: 0, bytes: 0 });
  });

  test('values above 8 KiB are stored gzip-compressed, smaller ones as they are', async () => {
    const s = store();
    await s.set('small', answerOfSize(2_000), HOUR);
    await s.set('large', answerOfSize(300_000), HOUR);
    const small = await admin.getBuffer(`${PREFIX}${stores}:cache:v:small`);
    const large = await admin.getBuffer(`${PREFIX}${stores}:cache:v:large`);
    assert.ok(small !== null && large !== null);
    assert.equal(small[0], 0x01);
    assert.equal(large[0], 0x02);
    assert.ok(large.length < 300_000 / 20, `compressed to ${large.length} bytes`);
    assert.equal(s.stats().bytes, small.length + large.length, 'bytes are the stored (compressed) sizes');
  });

  test('the value carries the TTL in Redis', async () => {
    const s = store();
    await s.set('ttl', { body: 'x', createdAt: 0 }, 90_000);
    const pttl = await admin.pttl(`${PREFIX}${stores}:cache:v:ttl`);
    assert.ok(pttl > 80_000 && pttl <= 90_000, `pttl ${pttl}`);
  });

  test('a foreign or corrupt value reads as a miss', async () => {
    const s = store();
    await admin.set(`${PREFIX}${stores}:cache:v:junk`, 'not an answer');
    await admin.set(`${PREFIX}${stores}:cache:v:junk2`, Buffer.from([0x02, 1, 2, 3]));
    assert.equal(await s.get('junk'), undefined);
    assert.equal(await s.get('junk2'), undefined);
  });

  test('a flushed script cache is reloaded transparently', async () => {
    const s = store();
    await s.set('a', { body: 'a', createdAt: 0 }, HOUR);
    await admin.script('FLUSH');
    await s.set('b', { body: 'b', createdAt: 0 }, HOUR);
    assert.equal(s.stats().entries, 2);
  });

  test('an unreachable Redis rejects every call with AIGW_ERR_STORE_UNAVAILABLE', { timeout: 10_000 }, async () => {
    const s = store({ url: 'redis://:s3cret-pass@127.0.0.1:1', commandTimeoutMs: 50 });
    for (const call of [() => s.get('k'), () => s.set('k', { body: 'x', createdAt: 0 }, HOUR), () => s.delete('k'), () => s.get('k')]) {
      const error = await rejection(call);
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
      assert.doesNotMatch(error.message, /s3cret/);
    }
    assert.deepEqual(s.stats(), { entries: 0, bytes: 0 }, 'stats stay readable');
  });

  test('a Redis that accepts but never answers: only the command timeout can answer, and it rejects', { timeout: 10_000 }, async (t) => {
    const silent = await silentServer();
    t.after(() => silent.close());
    const s = store({ url: silent.url, commandTimeoutMs: 50 });
    const calls = await Promise.all(Array.from({ length: 20 }, (_, i) => rejection(() => (i % 2 ? s.get('k') : s.set('k', { body: 'x', createdAt: 0 }, HOUR)))));
    for (const error of calls) {
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    }
  });

  test('a closed store rejects with AIGW_ERR_STORE_UNAVAILABLE', async () => {
    const s = store();
    await s.close();
    const error = await rejection(() => s.get('k'));
    assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
  });
});

describe('redis response cache warm-up', { skip }, () => {
  test('connect loads the scripts and the current stats within its deadline, or rejects', async () => {
    const keyPrefix = `${PREFIX}warm:`;
    await store({ keyPrefix }).set('k', { body: 'b', createdAt: 0 }, HOUR);
    const s = store({ keyPrefix });
    await s.connect(2_000);
    assert.equal(s.stats().entries, 1);
    await assert.rejects(store({ url: 'redis://127.0.0.1:1' }).connect(300));
  });
});
