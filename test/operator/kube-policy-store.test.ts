// The cluster's policy store against an API server double that keeps RateLimitPolicy
// resources as the real one does (POST creates with a creationTimestamp, merge-PATCH merges
// spec and annotations); the informer's view is the double's list.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubePolicyStore, SOURCE_LABEL, type ResourceWriter } from '../../operator/api/kube-policy-store.ts';
import type { CustomResource } from '../../operator/reconcile/resource-types.ts';
import { policyStoreSuite } from '../proxy/ratelimit/policy-store-suite.ts';
import { resource } from './resource-fixtures.ts';

function apiServerDouble(initial: CustomResource[] = []): { client: ResourceWriter; resources: CustomResource[] } {
  const resources = [...initial];
  let version = 0;
  const client: ResourceWriter = {
    async request<T>(method: string, path: string, options?: { body?: unknown }): Promise<T> {
      const body = options?.body as CustomResource;
      if (method === 'POST') {
        const created: CustomResource = {
          ...body,
          metadata: { ...body.metadata, creationTimestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, resources.length)).toISOString(), resourceVersion: String(++version) },
        };
        resources.push(created);
        return created as T;
      }
      if (method === 'PATCH') {
        const name = path.split('/').at(-1);
        const index = resources.findIndex((item) => item.metadata.name === name);
        if (index === -1) throw Object.assign(new Error('not found'), { status: 404 });
        const current = resources[index] as CustomResource;
        const patched: CustomResource = {
          ...current,
          metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, ...body.metadata?.annotations }, resourceVersion: String(++version) },
          spec: { ...(current.spec as object), ...(body.spec as object) },
        };
        resources[index] = patched;
        return patched as T;
      }
      throw new Error(`unexpected ${method} ${path}`);
    },
  };
  return { client, resources };
}

policyStoreSuite('RateLimitPolicy resources', async () => {
  const api = apiServerDouble();
  return { store: new KubePolicyStore({ client: api.client, namespace: 'aigw', resources: () => api.resources }), settle: async () => undefined };
});

describe('KubePolicyStore beyond the contract', () => {
  test('policies applied with kubectl are enforced state, not listed or changed through the API', async () => {
    const fromGit = resource('RateLimitPolicy', 'from-git', { type: 'requests', unit: 'rpm', value: 10, conditions: [{ key: 'model', value: 'x' }], group_by: [{ key: 'api_key' }] });
    const api = apiServerDouble([fromGit]);
    const store = new KubePolicyStore({ client: api.client, namespace: 'aigw', resources: () => api.resources });
    assert.deepEqual(await store.list(), []);
    assert.deepEqual(store.statePolicies().map((policy) => policy.id), ['from-git']);
    assert.equal(await store.update('from-git', { status: 'archived' }), undefined);
    const created = await store.create({ type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] });
    assert.equal(api.resources.at(-1)?.metadata.labels?.[SOURCE_LABEL], 'api');
    assert.equal(api.resources.at(-1)?.metadata.name, created.id);
  });
});
