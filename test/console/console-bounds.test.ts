// What a console left open all day may ask of the gateway, bounded on the server side: log
// pages of at most 100, summaries over one day unless a range is given, at most 100 groups;
// the cluster view's sources, replicas and conditions capped where the operator makes them
// and again where a proxy reads them. (The browser test checks the console's own queries:
// every log read has a time range, every summary spans at most a week.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { describeReplicas, describeSources } from '../../operator/api/cluster-view-routes.ts';
import type { KindName } from '../../operator/reconcile/resource-schemas.ts';
import type { CustomResource } from '../../operator/reconcile/resource-types.ts';
import { ClusterViewSchema, MAX_REPLICAS, MAX_SOURCES } from '../../proxy/console/cluster-view.ts';
import { MAX_PAGE_SIZE, MAX_SUMMARY_GROUPS } from '../../proxy/logs/request-log-store.ts';
import { requestLogRoutes } from '../../proxy/logs/request-log-routes.ts';
import type { RequestLogStore } from '../../proxy/logs/request-log-store.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

// A store that records what it is asked: the bounds are the routes', whatever the store.
const asked: Array<{ call: string; filter?: { from?: number; to?: number }; limit?: number }> = [];
const store: RequestLogStore = {
  async insertMany() {},
  async query(filter, _after, limit) {
    asked.push({ call: 'query', filter, limit });
    return { records: [], hasMore: false, nextCursor: undefined };
  },
  async get() {
    return undefined;
  },
  async summary(filter) {
    asked.push({ call: 'summary', filter });
    return {
      total: { requests: 0, errors: 0, promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0, unpricedRequests: 0, latencyP50Ms: null, latencyP95Ms: null, cacheHits: 0, cacheLookups: 0 },
      groups: [],
      hasMoreGroups: false,
    };
  },
  async deleteOlderThan() {
    return 0;
  },
  async close() {},
};

let harness: Harness;
before(async () => {
  harness = await startHarness({ state: baseState({}), plugins: [requestLogRoutes(store)] });
});
after(() => harness?.close());

const get = async (path: string): Promise<{ status: number; json: Record<string, unknown> }> => {
  const response = await fetch(`${harness.gateway.origin}${path}`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
};

describe('the server-side bounds of what the console reads', () => {
  test('a log page holds at most 100 records: limit=101 is refused before the store is asked', async () => {
    assert.equal(MAX_PAGE_SIZE, 100);
    asked.length = 0;
    assert.equal((await get('/v1/logs?limit=101')).status, 400);
    assert.equal((await get('/v1/logs?limit=0')).status, 400);
    assert.equal(asked.length, 0);
    assert.equal((await get('/v1/logs?limit=100')).status, 200);
    assert.equal(asked[0]?.limit, 100);
  });

  test('a summary without a range covers one day, never the whole log; at most 100 groups', async () => {
    asked.length = 0;
    const { status, json } = await get('/v1/analytics/summary?group_by=model');
    assert.equal(status, 200);
    const filter = asked[0]?.filter;
    assert.equal((filter?.to ?? 0) - (filter?.from ?? 0), 86_400_000);
    assert.equal(Date.parse(String(json['to'])) - Date.parse(String(json['from'])), 86_400_000);
    assert.equal(MAX_SUMMARY_GROUPS, 100);
    assert.equal((await get('/v1/analytics/summary?from=2026-01-02&to=2026-01-01')).status, 400);
    assert.equal((await get(`/v1/logs?trace_id=${'x'.repeat(1_025)}`)).status, 400, 'a filter value is at most 1,024 characters');
  });

  test("the cluster view: the operator caps replicas and each resource's conditions; a proxy refuses an answer past the caps", () => {
    const replicas = describeReplicas({ replicas: Array.from({ length: MAX_REPLICAS + 50 }, (_, index) => ({ address: `10.0.${index >> 8}.${index & 255}:8787`, hash: 'h' })), checkedAtMs: 0 }, 'h');
    assert.equal(replicas.length, MAX_REPLICAS);
    // A status another writer filled: 40 conditions with long messages.
    const hostile: CustomResource = {
      metadata: { name: 'p', generation: 1 },
      spec: { provider: 'openai' },
      status: { observedGeneration: 1, conditions: Array.from({ length: 40 }, (_, index) => ({ type: `T${index}`, status: 'True', reason: 'R', message: 'm'.repeat(10_000) })) },
    };
    const [source] = describeSources('aigw', (kind: KindName) => (kind === 'Provider' ? [hostile] : []), []);
    assert.equal(source?.conditions.length, 16);
    assert.ok((source?.conditions[0]?.message.length ?? 0) <= 2_048);
    const view = { object: 'gateway.cluster', namespace: 'aigw', desired_hash: 'h', replicas_tracked: true, replicas: [], has_more_sources: true };
    const many = Array.from({ length: MAX_SOURCES + 1 }, (_, index) => ({ kind: 'Provider', namespace: 'aigw', name: `p${index}`, generation: 1, observed_generation: 1, rendered: false, item: null, conditions: [] }));
    assert.equal(ClusterViewSchema.safeParse({ ...view, sources: many }).success, false);
    assert.equal(ClusterViewSchema.safeParse({ ...view, sources: many.slice(0, MAX_SOURCES) }).success, true);
  });
});
