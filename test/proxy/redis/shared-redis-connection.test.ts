// The counter store, response cache and semantic index share one Redis connection
// (openRedisConnection): one client for all three, a store's close leaves the others
// working, and only the owner's close ends it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { RedisResponseCache } from '../../../proxy/cache/redis-response-cache.ts';
import { RedisSemanticIndex } from '../../../proxy/cache/redis-semantic-index.ts';
import { RedisCounterStore } from '../../../proxy/ratelimit/redis-counter-store.ts';
import { openRedisConnection } from '../../../proxy/redis/fail-fast-redis.ts';
import { PREFIX, REDIS_URL, admin, skip } from '../../helpers/redis-test-kit.ts';

const spec = { key: 'shared', windowMs: 60_000, limit: 5 };

test('three stores on one connection: one client, a store closing leaves the others, the owner closes it', { skip }, async () => {
  const connection = openRedisConnection(REDIS_URL, { commandTimeoutMs: 2_000 });
  const name = `aigw-shared-${randomUUID()}`;
  const options = { connection, keyPrefix: PREFIX, commandTimeoutMs: 2_000 };
  const counters = new RedisCounterStore(options);
  const cache = new RedisResponseCache({ ...options, statsRefreshMs: 0 });
  const index = new RedisSemanticIndex(options);
  try {
    await Promise.all([counters.connect(2_000), cache.connect(2_000), index.connect(2_000)]);
    await connection.client.client('SETNAME', name);
    const clients = (await admin.client('LIST')) as string;
    assert.equal(clients.split('\n').filter((line) => line.includes(`name=${name} `)).length, 1, 'one Redis client for the three stores');

    await cache.close();
    await index.close();
    const decision = await counters.consume(spec, 1, Date.now());
    assert.equal(decision.allowed, true, 'the counter store still answers after the cache stores closed');
    assert.equal(connection.closed, false);

    await counters.close();
    await assert.rejects(counters.consume(spec, 1, Date.now()), { code: 'AIGW_ERR_STORE_UNAVAILABLE' });
    assert.equal(connection.client.status, 'ready', 'a store closing does not close the shared connection');
  } finally {
    await connection.close();
  }
  assert.equal(connection.closed, true);
});

test('a store made from a url owns its connection', { skip }, async () => {
  const counters = new RedisCounterStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 2_000 });
  await counters.connect(2_000);
  assert.equal((await counters.consume(spec, 1, Date.now())).allowed, true);
  await counters.close();
  await assert.rejects(counters.consume(spec, 1, Date.now()), { code: 'AIGW_ERR_STORE_UNAVAILABLE' });
});

test('a store needs exactly one of connection and url', async () => {
  assert.throws(() => new RedisCounterStore({}), TypeError);
  const connection = openRedisConnection(REDIS_URL);
  try {
    assert.throws(() => new RedisCounterStore({ connection, url: REDIS_URL }), TypeError);
  } finally {
    // The owner's close, which settles the connection attempt under way.
    await connection.close();
  }
});
