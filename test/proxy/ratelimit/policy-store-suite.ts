// The contract every PolicyStore keeps (proxy/ratelimit/policy-store.ts): the standalone file
// store and the cluster's RateLimitPolicy-resource store (operator/api/kube-policy-store.ts)
// run the same cases, so the control-plane API behaves the same on both.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NewPolicy, PolicyStore } from '../../../proxy/ratelimit/policy-store.ts';

export interface PolicyStoreFixture {
  readonly store: PolicyStore;
  /** Waits until the store's reads reflect its writes (a cluster store's informer); no-op when immediate. */
  settle(): Promise<void>;
}

const POLICY: NewPolicy = {
  type: 'requests',
  unit: 'rpm',
  value: 5,
  workspace_id: 'team-a',
  name: 'five a minute',
  conditions: [{ key: 'workspace_id', value: 'team-a' }],
  group_by: [{ key: 'api_key' }],
};

const byId = <T extends { id: string }>(items: readonly T[]): T[] => [...items].sort((a, b) => a.id.localeCompare(b.id));

export function policyStoreSuite(name: string, open: () => Promise<PolicyStoreFixture>): void {
  describe(`PolicyStore contract: ${name}`, () => {
    test('a new store lists nothing', async () => {
      const { store } = await open();
      assert.deepEqual(await store.list(), []);
      assert.deepEqual(store.snapshot(), []);
    });

    test('create returns the stored policy: an id, active, timestamps, the fields as given', async () => {
      const { store, settle } = await open();
      const created = await store.create(POLICY);
      assert.ok(created.id.length > 0);
      assert.equal(created.status, 'active');
      assert.ok(created.created_at !== undefined && !Number.isNaN(Date.parse(created.created_at)));
      assert.ok(created.last_updated_at !== undefined && !Number.isNaN(Date.parse(created.last_updated_at)));
      const { id: _id, status: _status, created_at: _created, last_updated_at: _updated, ...fields } = created;
      assert.deepEqual(fields, POLICY);
      await settle();
      assert.deepEqual(await store.list(), [created]);
      assert.deepEqual(store.snapshot(), [created], 'the request path sees it without I/O');
    });

    test('every create gets its own id, and both are listed', async () => {
      const { store, settle } = await open();
      const first = await store.create(POLICY);
      const second = await store.create({ ...POLICY, value: 9, name: 'nine' });
      assert.notEqual(first.id, second.id);
      await settle();
      assert.deepEqual(byId(await store.list()), byId([first, second]));
    });

    test('update changes only what it is given and is what later reads see', async () => {
      const { store, settle } = await open();
      const created = await store.create(POLICY);
      await settle();
      const archived = await store.update(created.id, { status: 'archived', value: 7 });
      assert.ok(archived !== undefined);
      assert.equal(archived.status, 'archived');
      assert.equal(archived.value, 7);
      assert.equal(archived.name, POLICY.name);
      assert.deepEqual(archived.conditions, POLICY.conditions);
      assert.equal(archived.created_at, created.created_at);
      assert.ok(Date.parse(archived.last_updated_at ?? '') >= Date.parse(created.last_updated_at ?? ''));
      await settle();
      assert.deepEqual(await store.list(), [archived]);
      assert.deepEqual(store.snapshot(), [archived]);
    });

    test('updating an id the store does not hold is undefined and writes nothing', async () => {
      const { store, settle } = await open();
      const created = await store.create(POLICY);
      await settle();
      assert.equal(await store.update('no-such-policy', { status: 'archived' }), undefined);
      await settle();
      assert.deepEqual(await store.list(), [created]);
    });
  });
}
