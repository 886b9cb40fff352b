// UsageLimitPolicy status.spend and the budget Events: the leader reads the proxies' budget
// counters (memory store here, the real Redis in the last case), writes status.spend only
// when it changed, feeds ThresholdReached / Exhausted to the StatusWriter, and records one
// Warning Event per policy and period crossing — not again on the next read, a leader change
// or a new spend, again in the next period.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { counterKey } from '../../proxy/budgets/budget-enforcer.ts';
import { periodOf } from '../../proxy/budgets/budget-period.ts';
import { MemoryBudgetStore } from '../../proxy/budgets/budget-store.ts';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import type { UsageLimitPolicy } from '../../proxy/budgets/usage-limit-schema.ts';
import { BudgetSpendTracker, SPEND_CONDITION_TYPES } from '../../operator/k8s/budget-spend-tracker.ts';
import type { KubeClient } from '../../operator/k8s/kube-client.ts';
import { StatusWriter } from '../../operator/k8s/status-writer.ts';
import type { CustomResource, RenderedStatus } from '../../operator/reconcile/resource-types.ts';
import { eventually } from '../helpers/eventually.ts';
import { PREFIX, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';

interface Call {
  readonly method: string;
  readonly path: string;
  readonly body: any;
}

function fakeClient(): { client: KubeClient; calls: Call[]; events: () => any[]; patches: () => any[] } {
  const calls: Call[] = [];
  let version = 10;
  const client = {
    async request(method: string, path: string, options: { body?: unknown } = {}) {
      calls.push({ method, path, body: options.body });
      version += 1;
      return { metadata: { name: 'x', resourceVersion: String(version) } };
    },
  } as unknown as KubeClient;
  return {
    client,
    calls,
    events: () => calls.filter((call) => call.method === 'POST' && call.path.endsWith('/events')).map((call) => call.body),
    patches: () => calls.filter((call) => call.method === 'PATCH').map((call) => call.body),
  };
}

const SPEC = {
  type: 'cost',
  credit_limit: 10,
  alert_threshold: 8,
  periodic_reset: 'daily',
  conditions: [{ key: 'workspace_id', value: 'team-a' }],
  group_by: [{ key: 'api_key' }],
};

function resourceOf(name: string, spec: Record<string, unknown> = SPEC, status?: unknown): CustomResource {
  return { kind: 'UsageLimitPolicy', metadata: { name, uid: `uid-${name}`, generation: 1, resourceVersion: '5' }, spec, ...(status === undefined ? {} : { status }) };
}

function policyOf(name: string, spec: Record<string, unknown> = SPEC): UsageLimitPolicy {
  return { id: name, status: 'active', time_zone: 'UTC', fail_open: true, ...spec } as UsageLimitPolicy;
}

/** Settles `usd` on one group of the policy's period at `atMs`. */
async function spend(store: MemoryBudgetStore | RedisBudgetStore, policy: UsageLimitPolicy, atMs: number, group: string, usd: number): Promise<void> {
  const key = counterKey(policy, periodOf(policy, atMs), group);
  await store.settle([{ key, actual: Math.round(usd * 1_000_000), ttlSeconds: 0, alertAt: -1 }], `t-${Math.random()}`);
}

const DAY1 = Date.parse('2026-11-26T10:00:00Z');
const DAY2 = Date.parse('2026-11-27T10:00:00Z');

describe('BudgetSpendTracker', () => {
  test('writes status.spend (period, unit, limit, spent, remaining, groups, updatedAt) only when it changed, and the conditions', async () => {
    const { client, patches, events } = fakeClient();
    let now = DAY1;
    const store = new MemoryBudgetStore({ now: () => now });
    const policy = policyOf('team-a-daily');
    await spend(store, policy, now, 'api_key=k1', 1.5);
    await spend(store, policy, now, 'api_key=k2', 0.25);
    // An open reservation on k1 counts in what is left, not in what was spent.
    await store.reserve([{ key: counterKey(policy, '2026-11-26', 'api_key=k1'), limit: 10_000_000, amount: 500_000, ttlSeconds: 0 }], 'open');
    let changes = 0;
    const tracker = new BudgetSpendTracker({
      client,
      namespace: 'ns',
      identity: 'op-1',
      store,
      resources: () => [resourceOf('team-a-daily')],
      active: () => true,
      onChange: () => (changes += 1),
      now: () => now,
    });
    await tracker.refresh();
    assert.deepEqual(patches(), [
      {
        status: {
          spend: { period: '2026-11-26', unit: 'usd', limit: 10, alertThreshold: 8, spent: 1.75, remaining: 8, groups: 2, updatedAt: '2026-11-26T10:00:00Z' },
        },
      },
    ]);
    assert.deepEqual(
      tracker.conditionsFor('team-a-daily').map((condition) => [condition.type, condition.status, condition.reason]),
      [
        ['ThresholdReached', 'False', 'BelowThreshold'],
        ['Exhausted', 'False', 'WithinBudget'],
      ],
    );
    assert.equal(changes, 1);
    now += 30_000;
    await tracker.refresh();
    assert.equal(patches().length, 1, 'nothing changed: no write');
    assert.equal(changes, 1);
    await spend(store, policy, now, 'api_key=k2', 0.5);
    await tracker.refresh();
    assert.equal(patches().length, 2);
    assert.equal(patches()[1].status.spend.spent, 2.25);
    assert.equal(events().length, 0);
    // Only the spend field is patched: the StatusWriter keeps the conditions.
    assert.deepEqual(Object.keys(patches()[1].status), ['spend']);
  });

  test('the alert threshold and the limit each record one Warning Event per period crossing', async () => {
    const { client, events } = fakeClient();
    let now = DAY1;
    const store = new MemoryBudgetStore({ now: () => now });
    const policy = policyOf('p');
    const tracker = new BudgetSpendTracker({ client, namespace: 'ns', identity: 'op-1', store, resources: () => [resourceOf('p')], active: () => true, onChange: () => undefined, now: () => now });
    await spend(store, policy, now, 'api_key=k1', 7.9);
    await tracker.refresh();
    assert.equal(events().length, 0, 'below the threshold');
    await spend(store, policy, now, 'api_key=k1', 0.2);
    await tracker.refresh();
    assert.deepEqual(events().map((event) => [event.type, event.reason, event.involvedObject.kind, event.involvedObject.name]), [['Warning', 'BudgetThresholdReached', 'UsageLimitPolicy', 'p']]);
    assert.match(events()[0].message, /Alert threshold 8 usd reached: spent 8\.1 usd of 10 in period 2026-11-26/);
    assert.equal(tracker.conditionsFor('p')[0]?.status, 'True');
    // More spend in the same period, and more reads: no second Event.
    await spend(store, policy, now, 'api_key=k2', 8.5);
    await tracker.refresh();
    await tracker.refresh();
    assert.deepEqual(events().map((event) => event.reason), ['BudgetThresholdReached']);
    // The limit: 9.95 of 10 leaves less than 1%.
    await spend(store, policy, now, 'api_key=k1', 1.85);
    await tracker.refresh();
    await tracker.refresh();
    assert.deepEqual(events().map((event) => event.reason), ['BudgetThresholdReached', 'BudgetExhausted']);
    assert.deepEqual(tracker.conditionsFor('p').map((condition) => condition.reason), ['BudgetThresholdReached', 'BudgetExhausted']);
    assert.match(tracker.conditionsFor('p')[0]?.message ?? '', /2 of 2 groups reached the alert threshold/);
    // The next day starts at zero: both conditions False, no Event until crossed again.
    now = DAY2;
    await tracker.refresh();
    assert.deepEqual(tracker.conditionsFor('p').map((condition) => condition.status), ['False', 'False']);
    assert.equal(events().length, 2);
    await spend(store, policy, now, 'api_key=k1', 9);
    await tracker.refresh();
    await tracker.refresh();
    assert.deepEqual(events().map((event) => event.reason), ['BudgetThresholdReached', 'BudgetExhausted', 'BudgetThresholdReached']);
  });

  test('a new leader does not repeat an Event its predecessor recorded in this period (it reads the status)', async () => {
    const { client, events } = fakeClient();
    const store = new MemoryBudgetStore({ now: () => DAY1 });
    const policy = policyOf('p');
    await spend(store, policy, DAY1, 'api_key=k1', 8.5);
    const status = {
      spend: { period: '2026-11-26', unit: 'usd', limit: 10, alertThreshold: 8, spent: 8.5, remaining: 1.5, groups: 1, updatedAt: '2026-11-26T09:59:30Z' },
      conditions: [{ type: 'ThresholdReached', status: 'True', reason: 'BudgetThresholdReached', message: '', lastTransitionTime: '2026-11-26T09:59:30Z' }],
    };
    const tracker = new BudgetSpendTracker({ client, namespace: 'ns', identity: 'op-2', store, resources: () => [resourceOf('p', SPEC, status)], active: () => true, onChange: () => undefined, now: () => DAY1 });
    await tracker.refresh();
    assert.equal(events().length, 0);
    // The same status from yesterday's period does not hide today's crossing.
    const stale = { ...status, spend: { ...status.spend, period: '2026-11-25' } };
    const fresh = fakeClient();
    const next = new BudgetSpendTracker({ client: fresh.client, namespace: 'ns', identity: 'op-3', store, resources: () => [resourceOf('p', SPEC, stale)], active: () => true, onChange: () => undefined, now: () => DAY1 });
    await next.refresh();
    assert.deepEqual(fresh.events().map((event) => event.reason), ['BudgetThresholdReached']);
  });

  test('without a shared store the conditions say Unknown (NoSharedStore); a store that fails keeps the last spend; followers never read', async () => {
    const { client, calls } = fakeClient();
    const tracker = new BudgetSpendTracker({ client, namespace: 'ns', identity: 'op', store: undefined, resources: () => [resourceOf('p')], active: () => true, onChange: () => undefined });
    await tracker.refresh();
    assert.deepEqual(tracker.conditionsFor('p').map((condition) => [condition.status, condition.reason]), [['Unknown', 'NoSharedStore'], ['Unknown', 'NoSharedStore']]);
    assert.equal(calls.length, 0);

    let failing = false;
    const memory = new MemoryBudgetStore({ now: () => DAY1 });
    await spend(memory, policyOf('p'), DAY1, 'api_key=k1', 2);
    const flaky = { scan: (prefix: string, max: number) => (failing ? Promise.reject(new Error('ECONNREFUSED')) : memory.scan(prefix, max)) };
    const second = new BudgetSpendTracker({ client, namespace: 'ns', identity: 'op', store: flaky, resources: () => [resourceOf('p')], active: () => true, onChange: () => undefined, now: () => DAY1 });
    await second.refresh();
    failing = true;
    await second.refresh();
    assert.equal(second.spendOf('p')?.spent, 2);
    assert.equal(second.conditionsFor('p')[0]?.reason, 'BelowThreshold');
    const cold = new BudgetSpendTracker({ client, namespace: 'ns', identity: 'op', store: flaky, resources: () => [resourceOf('p')], active: () => true, onChange: () => undefined, now: () => DAY1 });
    await cold.refresh();
    assert.equal(cold.conditionsFor('p')[0]?.reason, 'StoreUnavailable');

    let read = 0;
    const follower = new BudgetSpendTracker({
      client,
      namespace: 'ns',
      identity: 'op',
      store: { scan: async () => ((read += 1), []) },
      resources: () => [resourceOf('p')],
      active: () => false,
      onChange: () => undefined,
    });
    await follower.refresh();
    assert.equal(read, 0);
  });

  test('invalid and archived policies get no spend; a tokens policy reports tokens', async () => {
    const { client, patches } = fakeClient();
    const store = new MemoryBudgetStore({ now: () => DAY1 });
    const tokens = { ...SPEC, type: 'tokens', credit_limit: 1000, alert_threshold: undefined, periodic_reset: 'never' };
    await spend(store, policyOf('tok', tokens), DAY1, 'api_key=k1', 0.000120); // 120 units = 120 tokens
    const tracker = new BudgetSpendTracker({
      client,
      namespace: 'ns',
      identity: 'op',
      store,
      resources: () => [resourceOf('bad', { ...SPEC, credit_limit: -1 }), resourceOf('old', { ...SPEC, status: 'archived' }), resourceOf('tok', tokens)],
      active: () => true,
      onChange: () => undefined,
      now: () => DAY1,
    });
    await tracker.refresh();
    assert.equal(tracker.conditionsFor('bad').length, 0);
    assert.equal(tracker.conditionsFor('old').length, 0);
    assert.deepEqual(patches().map((patch) => patch.status.spend), [{ period: 'all', unit: 'tokens', limit: 1000, spent: 120, remaining: 880, groups: 1, updatedAt: '2026-11-26T10:00:00Z' }]);
    assert.equal(tracker.conditionsFor('tok')[0]?.reason, 'NoThreshold');
  });

  test('reads every interval and when a policy changes, not on every other change of the cache', async () => {
    const { client } = fakeClient();
    let reads = 0;
    let resources = [resourceOf('p')];
    const tracker = new BudgetSpendTracker({
      client,
      namespace: 'ns',
      identity: 'op',
      store: { scan: async () => ((reads += 1), []) },
      resources: () => resources,
      active: () => true,
      onChange: () => undefined,
      intervalMs: 3_600_000,
      minGapMs: 0,
    });
    tracker.start();
    try {
      await eventually(() => reads === 1, 'the first read');
      tracker.poke();
      tracker.poke();
      resources = [{ ...resourceOf('p'), metadata: { ...resourceOf('p').metadata, generation: 2 } }];
      tracker.poke();
      await eventually(() => reads === 2, 'a read for the changed policy');
      tracker.poke(true);
      await eventually(() => reads === 3, 'a forced read');
      assert.equal(reads, 3);
    } finally {
      tracker.stop();
    }
  });

  test('the StatusWriter records no Event of its own for the spend conditions (the tracker owns them)', async () => {
    const { client, events } = fakeClient();
    const writer = new StatusWriter({ client, namespace: 'ns', identity: 'op', quietConditionTypes: SPEND_CONDITION_TYPES });
    const rendered: RenderedStatus = {
      kind: 'UsageLimitPolicy',
      name: 'p',
      uid: 'uid-p',
      generation: 1,
      rendered: true,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Rendered', message: 'ok' },
        { type: 'ThresholdReached', status: 'False', reason: 'BelowThreshold', message: 'below' },
      ],
    };
    await writer.write([rendered], () => resourceOf('p'));
    assert.deepEqual(events().map((event) => event.reason), ['Rendered']);
  });
});

describe('BudgetSpendTracker with the real Redis', { skip }, () => {
  test('reads the counters the proxies settle in Redis', async () => {
    const proxyStore = new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX });
    const operatorStore = new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 2_000 });
    try {
      await proxyStore.connect(2_000);
      await operatorStore.connect(2_000);
      const now = Date.now();
      const policy = policyOf('redis-p');
      await spend(proxyStore, policy, now, 'api_key=k1', 3.25);
      await spend(proxyStore, policy, now, 'api_key=k2', 8);
      const { client, patches, events } = fakeClient();
      const tracker = new BudgetSpendTracker({ client, namespace: 'ns', identity: 'op', store: operatorStore, resources: () => [resourceOf('redis-p')], active: () => true, onChange: () => undefined, now: () => now });
      await tracker.refresh();
      const written = patches()[0]?.status.spend;
      assert.equal(written?.spent, 11.25);
      assert.equal(written?.groups, 2);
      assert.equal(written?.remaining, 2, 'the tightest group (k2) has $2 left');
      assert.equal(written?.period, periodOf(policy, now));
      assert.deepEqual(events().map((event) => event.reason), ['BudgetThresholdReached']);
    } finally {
      await proxyStore.close();
      await operatorStore.close();
    }
  });
});
