// The behaviour every RequestLogStore must show; each implementation's test file runs it
// (SQLite in a worker, the real PostgreSQL). Every test gets a fresh, empty store.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';
import {
  MAX_SUMMARY_GROUPS,
  RequestLogCursorError,
  type LogFilter,
  type RequestLogStore,
} from '../../../proxy/logs/request-log-store.ts';

const T0 = Date.UTC(2025, 0, 1);

let sequence = 0;
/** A record with sensible defaults; ids sort in creation order. */
export function logRecord(overrides: Partial<RequestRecord> = {}): RequestRecord {
  sequence++;
  return {
    id: `rec-${String(sequence).padStart(6, '0')}`,
    traceId: `trace-${sequence}`,
    startedAt: T0 + sequence,
    method: 'POST',
    route: '/v1/chat/completions',
    status: 200,
    latencyMs: 10,
    ttftMs: undefined,
    apiKeyId: 'key-1',
    workspace: 'default',
    configId: undefined,
    targetPath: undefined,
    provider: 'openai',
    model: 'gpt-4o-mini',
    metadata: undefined,
    promptTokens: undefined,
    completionTokens: undefined,
    totalTokens: undefined,
    cacheStatus: undefined,
    retries: 0,
    guardrailVerdict: undefined,
    errorCode: undefined,
    ...overrides,
  };
}

/** Registers the shared tests under `name`; `create` gives a fresh, empty store. */
export function requestLogStoreSuite(name: string, create: () => Promise<RequestLogStore>): void {
  async function withStore(run: (store: RequestLogStore) => Promise<void>): Promise<void> {
    const store = await create();
    try {
      await run(store);
    } finally {
      await store.close();
    }
  }

  async function ids(store: RequestLogStore, filter: LogFilter): Promise<string[]> {
    return (await store.query(filter, undefined, 100)).records.map((record) => record.id);
  }

  describe(`${name} request log store`, () => {
    test('a record reads back field for field; absent fields stay absent', () =>
      withStore(async (store) => {
        const full = logRecord({
          ttftMs: 123.456,
          configId: 'cfg-1',
          targetPath: 'targets[1]',
          metadata: { user: 'u1', n: 42, nested: { ok: true }, list: [1, 'two'] },
          promptTokens: 11,
          completionTokens: 22,
          totalTokens: 33,
          cacheStatus: 'MISS',
          retries: 2,
          guardrailVerdict: 'pass',
          errorCode: 'AIGW_ERR_UPSTREAM_TIMEOUT',
          status: 504,
          latencyMs: 30_001.25,
          modelRequested: 'gpt-4o-mini',
          attempts: [
            { target: 'config.targets[0]', provider: 'openai', model: 'gpt-4o', status: 500, durationMs: 12.5, errorCode: undefined },
            { target: 'config.targets[1]', provider: '@gone', model: undefined, status: null, durationMs: 0, errorCode: 'AIGW_ERR_UNKNOWN_PROVIDER', skipped: 'unresolved' },
            { target: 'config.targets[2]', provider: 'openai', model: 'gpt-4o-mini', status: null, durationMs: 30_000, errorCode: 'AIGW_ERR_UPSTREAM_TIMEOUT' },
          ],
        });
        const sparse = logRecord({ apiKeyId: undefined, workspace: undefined, provider: undefined, model: undefined });
        await store.insertMany([full, sparse]);
        assert.deepEqual(await store.get(full.id), full);
        assert.deepEqual(await store.get(sparse.id), sparse);
        assert.equal(await store.get('no-such-id'), undefined);
      }));

    test('inserting an id that is already stored keeps the first', () =>
      withStore(async (store) => {
        const first = logRecord({ model: 'first' });
        await store.insertMany([first]);
        await store.insertMany([{ ...first, model: 'second' }, logRecord()]);
        assert.equal((await store.get(first.id))?.model, 'first');
        assert.equal((await store.query({}, undefined, 100)).records.length, 2);
      }));

    test('filters by trace id, newest first', () =>
      withStore(async (store) => {
        const a = [logRecord({ traceId: 'A' }), logRecord({ traceId: 'B' }), logRecord({ traceId: 'A' }), logRecord({ traceId: 'A' })];
        await store.insertMany(a);
        assert.deepEqual(await ids(store, { traceId: 'A' }), [a[3]?.id, a[2]?.id, a[0]?.id]);
        assert.deepEqual(await ids(store, { traceId: 'C' }), []);
      }));

    test('filters by two metadata keys (both must match); non-string values match their JSON text', () =>
      withStore(async (store) => {
        const match1 = logRecord({ metadata: { user: 'u1', env: 'prod' } });
        const wrongEnv = logRecord({ metadata: { user: 'u1', env: 'dev' } });
        const wrongUser = logRecord({ metadata: { user: 'u2', env: 'prod' } });
        const match2 = logRecord({ metadata: { user: 'u1', env: 'prod', n: 42, flag: true, obj: { a: 1 } } });
        const onlyUser = logRecord({ metadata: { user: 'u1' } });
        const none = logRecord();
        await store.insertMany([match1, wrongEnv, wrongUser, match2, onlyUser, none]);
        assert.deepEqual(await ids(store, { metadata: { user: 'u1', env: 'prod' } }), [match2.id, match1.id]);
        assert.deepEqual(await ids(store, { metadata: { user: 'u1' } }), [onlyUser.id, match2.id, wrongEnv.id, match1.id]);
        assert.deepEqual(await ids(store, { metadata: { n: '42' } }), [match2.id]);
        assert.deepEqual(await ids(store, { metadata: { flag: 'true' } }), [match2.id]);
        assert.deepEqual(await ids(store, { metadata: { obj: '{"a":1}' } }), [match2.id]);
        assert.deepEqual(await ids(store, { metadata: { user: 'u1', env: 'staging' } }), []);
      }));

    test('filters by exact status and by status class', () =>
      withStore(async (store) => {
        const ok = logRecord({ status: 200 });
        const limited = logRecord({ status: 429 });
        const bad = logRecord({ status: 400 });
        const down = logRecord({ status: 503 });
        const aborted = logRecord({ status: 499 });
        await store.insertMany([ok, limited, bad, down, aborted]);
        assert.deepEqual(await ids(store, { status: { min: 429, max: 429 } }), [limited.id]);
        assert.deepEqual(await ids(store, { status: { min: 400, max: 499 } }), [aborted.id, bad.id, limited.id]);
        assert.deepEqual(await ids(store, { status: { min: 500, max: 599 } }), [down.id]);
      }));

    test('filters by route, provider, model, workspace and api key id together', () =>
      withStore(async (store) => {
        const target = logRecord({ route: '/v1/embeddings', provider: 'anthropic', model: 'claude', workspace: 'team-a', apiKeyId: 'k1' });
        await store.insertMany([
          target,
          logRecord({ provider: 'anthropic', model: 'claude', workspace: 'team-a', apiKeyId: 'k1' }),
          logRecord({ provider: 'anthropic', model: 'other', workspace: 'team-a', apiKeyId: 'k1' }),
          logRecord({ provider: 'openai', model: 'claude', workspace: 'team-a', apiKeyId: 'k1' }),
          logRecord({ provider: 'anthropic', model: 'claude', workspace: 'team-b', apiKeyId: 'k1' }),
          logRecord({ provider: 'anthropic', model: 'claude', workspace: 'team-a', apiKeyId: 'k2' }),
        ]);
        assert.deepEqual(await ids(store, { route: '/v1/embeddings', provider: 'anthropic', model: 'claude', workspace: 'team-a', apiKeyId: 'k1' }), [target.id]);
        assert.equal((await ids(store, { provider: 'anthropic' })).length, 5);
      }));

    test('time range: from inclusive, to exclusive', () =>
      withStore(async (store) => {
        const at = (ms: number) => logRecord({ startedAt: T0 + ms });
        const records = [at(0), at(999), at(1_000), at(1_999), at(2_000)];
        await store.insertMany(records);
        assert.deepEqual(await ids(store, { from: T0 + 1_000, to: T0 + 2_000 }), [records[3]?.id, records[2]?.id]);
        assert.deepEqual(await ids(store, { from: T0 + 2_000 }), [records[4]?.id]);
        assert.deepEqual(await ids(store, { to: T0 + 999 }), [records[0]?.id]);
      }));

    test('cursor pagination walks every record once, newest first, while new records arrive', () =>
      withStore(async (store) => {
        // Ties on startedAt are ordered by id, so equal times cannot repeat or skip a record.
        const original = Array.from({ length: 11 }, (_, i) => logRecord({ startedAt: T0 + Math.floor(i / 3), metadata: { run: 'walk' } }));
        await store.insertMany(original);
        const expected = [...original].reverse().map((record) => record.id);
        const seen: string[] = [];
        let after: string | undefined;
        for (let pageNo = 0; pageNo < 10; pageNo++) {
          const page = await store.query({ metadata: { run: 'walk' } }, after, 3);
          seen.push(...page.records.map((record) => record.id));
          // Newer records (and a tie at the newest time) land while the client walks.
          await store.insertMany([logRecord({ startedAt: T0 + 1_000, metadata: { run: 'walk' } }), logRecord({ startedAt: T0 + 3, metadata: { run: 'walk' } })]);
          if (!page.hasMore) {
            assert.equal(page.nextCursor, undefined);
            break;
          }
          assert.equal(page.nextCursor, page.records.at(-1)?.id);
          after = page.nextCursor;
        }
        assert.deepEqual(seen, expected);
      }));

    test('a cursor naming no stored record is a RequestLogCursorError', () =>
      withStore(async (store) => {
        await store.insertMany([logRecord()]);
        await assert.rejects(store.query({}, 'gone', 10), RequestLogCursorError);
      }));

    test('summary: requests, errors, tokens, nearest-rank p50/p95 and cache hit rate, in total and by provider', () =>
      withStore(async (store) => {
        const a = Array.from({ length: 20 }, (_, i) =>
          logRecord({
            provider: 'a',
            latencyMs: i + 1,
            status: i === 0 ? 500 : i === 1 ? 429 : 200,
            promptTokens: 10,
            completionTokens: 5,
            totalTokens: 15,
            // Half priced, half unknown: unknown cost is counted apart, never summed as zero.
            costUsd: i < 10 ? 0.25 : undefined,
            cacheStatus: i < 4 ? 'HIT' : i < 6 ? 'SEMANTIC HIT' : i < 10 ? 'MISS' : 'DISABLED',
          }),
        );
        const b = [10, 50, 30, 20, 40].map((latencyMs) => logRecord({ provider: 'b', latencyMs, promptTokens: 1 }));
        await store.insertMany([...a, ...b, logRecord({ provider: 'a', startedAt: T0 - 1 })]);
        const summary = await store.summary({ from: T0, to: T0 + 1_000_000 }, { kind: 'provider' });
        assert.deepEqual(summary.total, {
          requests: 25,
          errors: 2,
          promptTokens: 205,
          completionTokens: 100,
          totalTokens: 300,
          costUsd: 2.5,
          unpricedRequests: 10,
          latencyP50Ms: 12, // rank 13 of 1..9,10,10,11..19,20,20,30,40,50
          latencyP95Ms: 40, // rank 24
          cacheHits: 6,
          cacheLookups: 10,
        });
        assert.deepEqual(summary.groups, [
          { key: 'a', requests: 20, errors: 2, promptTokens: 200, completionTokens: 100, totalTokens: 300, costUsd: 2.5, unpricedRequests: 10, latencyP50Ms: 10, latencyP95Ms: 19, cacheHits: 6, cacheLookups: 10 },
          { key: 'b', requests: 5, errors: 0, promptTokens: 5, completionTokens: 0, totalTokens: 0, costUsd: 0, unpricedRequests: 0, latencyP50Ms: 30, latencyP95Ms: 50, cacheHits: 0, cacheLookups: 0 },
        ]);
        assert.equal(summary.hasMoreGroups, false);
      }));

    test('summary by model and by a metadata key; records without the key form the null group, listed last', () =>
      withStore(async (store) => {
        await store.insertMany([
          logRecord({ model: 'm1', metadata: { team: 'red' } }),
          logRecord({ model: 'm1', metadata: { team: 'red' } }),
          logRecord({ model: 'm2', metadata: { team: 'blue' } }),
          logRecord({ model: 'm2' }),
          logRecord({ model: 'm2', metadata: { other: 'x' } }),
        ]);
        const byModel = await store.summary({}, { kind: 'model' });
        assert.deepEqual(byModel.groups.map((g) => [g.key, g.requests]), [['m2', 3], ['m1', 2]]);
        const byTeam = await store.summary({}, { kind: 'metadata', key: 'team' });
        assert.deepEqual(byTeam.groups.map((g) => [g.key, g.requests]), [['red', 2], [null, 2], ['blue', 1]]);
        const filtered = await store.summary({ metadata: { team: 'red' } }, { kind: 'model' });
        assert.deepEqual(filtered.groups.map((g) => [g.key, g.requests]), [['m1', 2]]);
      }));

    test('summary of an empty range: zero requests, null percentiles, no groups', () =>
      withStore(async (store) => {
        await store.insertMany([logRecord()]);
        const summary = await store.summary({ from: T0 + 10_000_000, to: T0 + 20_000_000 }, { kind: 'provider' });
        assert.equal(summary.total.requests, 0);
        assert.equal(summary.total.latencyP50Ms, null);
        assert.equal(summary.total.latencyP95Ms, null);
        assert.deepEqual(summary.groups, []);
      }));

    test(`summary lists at most ${MAX_SUMMARY_GROUPS} groups, the largest, and says more exist`, () =>
      withStore(async (store) => {
        const records = Array.from({ length: MAX_SUMMARY_GROUPS + 5 }, (_, i) => logRecord({ model: `m-${String(i).padStart(3, '0')}` }));
        records.push(logRecord({ model: 'm-104' }));
        await store.insertMany(records);
        const summary = await store.summary({}, { kind: 'model' });
        assert.equal(summary.groups.length, MAX_SUMMARY_GROUPS);
        assert.equal(summary.hasMoreGroups, true);
        assert.deepEqual(summary.groups[0], { ...summary.groups[0], key: 'm-104', requests: 2 });
        assert.equal(summary.total.requests, MAX_SUMMARY_GROUPS + 6);
      }));

    test('deleteOlderThan removes only older records and says how many', () =>
      withStore(async (store) => {
        const records = [0, 1, 2, 3, 4].map((i) => logRecord({ startedAt: T0 + i * 1_000 }));
        await store.insertMany(records);
        assert.equal(await store.deleteOlderThan(T0 + 2_000), 2);
        assert.deepEqual(await ids(store, {}), [records[4]?.id, records[3]?.id, records[2]?.id]);
        assert.equal(await store.deleteOlderThan(T0), 0);
      }));

    test('strings a database would refuse (NUL, lone surrogates) are stored with U+FFFD instead of failing the batch', () =>
      withStore(async (store) => {
        const odd = logRecord({ model: 'gpt\u0000x', metadata: { 'k\u0000': 'v\uD800', ok: 'fine' } });
        await store.insertMany([odd, logRecord()]);
        const back = await store.get(odd.id);
        assert.equal(back?.model, 'gpt\uFFFDx');
        assert.deepEqual(back?.metadata, { 'k\uFFFD': 'v\uFFFD', ok: 'fine' });
        assert.deepEqual(await ids(store, { metadata: { ok: 'fine' } }), [odd.id]);
      }));

    test('a batch of 2,000 records is one insertMany', () =>
      withStore(async (store) => {
        const records = Array.from({ length: 2_000 }, () => logRecord({ metadata: { bulk: 'yes' } }));
        await store.insertMany(records);
        const summary = await store.summary({ metadata: { bulk: 'yes' } }, undefined);
        assert.equal(summary.total.requests, 2_000);
      }));
  });
}
