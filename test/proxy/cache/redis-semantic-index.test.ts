// Runs the shared index suite against the real Redis, plus what only the shared index must
// do: one replica's entries found by another, Redis-side bounds, and failing fast.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { RedisSemanticIndex, type RedisSemanticIndexOptions } from '../../../proxy/cache/redis-semantic-index.ts';
import { LexicalEmbedder } from '../../../proxy/cache/semantic-cache.ts';
import { PREFIX, REDIS_URL, admin, reachable, silentServer, skip, rejection } from '../../helpers/redis-test-kit.ts';
import { axis, semanticIndexSuite } from './semantic-index-suite.ts';

const HOUR = 3_600_000;
const open: RedisSemanticIndex[] = [];
let indexes = 0;
function index(options: Partial<RedisSemanticIndexOptions> = {}): RedisSemanticIndex {
  const i = new RedisSemanticIndex({ url: REDIS_URL, keyPrefix: `${PREFIX}${++indexes}:`, commandTimeoutMs: 2_000, ...options });
  open.push(i);
  return i;
}
after(() => Promise.all(open.map((i) => i.close())));

if (reachable) {
  semanticIndexSuite('redis', async (bounds) => index({ maxPerPartition: bounds?.maxPerPartition, maxMirrorEntries: bounds?.maxEntries }));
}

describe('redis semantic index across replicas and failures', { skip }, () => {
  test('an entry added on one replica is found on another, both ways, as entries arrive', async () => {
    const keyPrefix = `${PREFIX}replicas:`;
    const a = index({ keyPrefix });
    const b = index({ keyPrefix });
    const embedder = new LexicalEmbedder();
    await a.add('p', await embedder.embed('Please tell me what the capital city of France is.'), 'answer-1', HOUR);
    const hit = await b.search('p', await embedder.embed('Can you please tell me what the capital city of France is?'), 0.9);
    assert.equal(hit?.key, 'answer-1');
    // b now holds the partition; later additions on a reach it incrementally.
    await a.add('p', axis(3, 1024), 'answer-2', HOUR);
    assert.equal((await b.search('p', axis(3, 1024), 0.99))?.key, 'answer-2');
    await b.add('p', axis(4, 1024), 'answer-3', HOUR);
    assert.equal((await a.search('p', axis(4, 1024), 0.99))?.key, 'answer-3');
    assert.equal(await b.search('other-partition', axis(3, 1024), 0.5), undefined);
  });

  test('a replaced key is replaced on every replica', async () => {
    const keyPrefix = `${PREFIX}replace:`;
    const a = index({ keyPrefix });
    const b = index({ keyPrefix });
    await a.add('p', axis(0), 'k', HOUR);
    assert.equal((await b.search('p', axis(0), 0.9))?.key, 'k');
    await a.add('p', axis(1), 'k', HOUR);
    assert.equal((await b.search('p', axis(1), 0.9))?.key, 'k');
    assert.equal(await b.search('p', axis(0), 0.9), undefined);
  });

  test('Redis keeps at most maxPerPartition entries per partition', async () => {
    const keyPrefix = `${PREFIX}per-partition:`;
    const writer = index({ keyPrefix, maxPerPartition: 3 });
    for (let i = 0; i < 6; i++) await writer.add('p', axis(i), `k${i}`, HOUR);
    assert.equal(await admin.hlen(`${keyPrefix}sem:p:p:v`), 3);
    assert.equal(await admin.zcard(`${keyPrefix}sem:p:p:s`), 3);
    const fresh = index({ keyPrefix, maxPerPartition: 3 });
    assert.equal(await fresh.search('p', axis(0), 0.9), undefined);
    assert.equal((await fresh.search('p', axis(5), 0.9))?.key, 'k5');
  });

  test('Redis keeps at most maxPartitions partitions, dropping the one expiring first', async () => {
    const keyPrefix = `${PREFIX}partitions:`;
    const writer = index({ keyPrefix, maxPartitions: 2 });
    await writer.add('p1', axis(0), 'k1', HOUR);
    await writer.add('p2', axis(0), 'k2', HOUR + 1_000);
    await writer.add('p3', axis(0), 'k3', HOUR + 2_000);
    assert.equal(await admin.zcard(`${keyPrefix}sem:parts`), 2);
    assert.equal(await admin.exists(`${keyPrefix}sem:p:p1:v`, `${keyPrefix}sem:p:p1:s`), 0);
    const fresh = index({ keyPrefix });
    assert.equal(await fresh.search('p1', axis(0), 0.9), undefined);
    assert.equal((await fresh.search('p3', axis(0), 0.9))?.key, 'k3');
  });

  test("a partition's keys expire with its longest-lived entry", async () => {
    const keyPrefix = `${PREFIX}expiry:`;
    const writer = index({ keyPrefix });
    await writer.add('p', axis(0), 'a', 60_000);
    await writer.add('p', axis(1), 'b', 90_000);
    await writer.add('p', axis(2), 'c', 30_000);
    for (const suffix of ['v', 's']) {
      const pttl = await admin.pttl(`${keyPrefix}sem:p:p:${suffix}`);
      assert.ok(pttl > 80_000 && pttl <= 90_000, `${suffix} pttl ${pttl}`);
    }
  });

  test('an unreachable Redis rejects search and add with AIGW_ERR_STORE_UNAVAILABLE within ~200 ms', async () => {
    const i = index({ url: 'redis://:s3cret-pass@127.0.0.1:1', commandTimeoutMs: 50 });
    for (const call of [() => i.search('p', axis(0), 0.9), () => i.add('p', axis(0), 'k', HOUR), () => i.search('p', axis(0), 0.9)]) {
      const error = await rejection(call);
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
      assert.doesNotMatch(error.message, /s3cret/);
    }
  });

  test('a Redis that accepts but never answers: only the command timeout can answer, and it rejects', { timeout: 10_000 }, async (t) => {
    const silent = await silentServer();
    t.after(() => silent.close());
    const i = index({ url: silent.url, commandTimeoutMs: 50 });
    const calls = await Promise.all(Array.from({ length: 10 }, () => rejection(() => i.search('p', axis(0), 0.9))));
    for (const error of calls) {
      assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    }
  });

  test('connect warms up within its deadline, or rejects', async () => {
    await index().connect(2_000);
    await assert.rejects(index({ url: 'redis://127.0.0.1:1' }).connect(300));
  });
});
