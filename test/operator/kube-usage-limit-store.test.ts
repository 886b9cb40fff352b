// The cluster's usage-limit store: POST /v1/policies/usage-limits on the operator creates a
// UsageLimitPolicy resource labelled as the API's; resources applied with kubectl are
// enforced state, listed but not changed through the API; invalid resources are skipped.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SOURCE_LABEL, type ResourceWriter } from '../../operator/api/kube-policy-store.ts';
import { KubeUsageLimitStore } from '../../operator/api/kube-usage-limit-store.ts';
import type { CustomResource } from '../../operator/reconcile/resource-types.ts';
import { resource } from './resource-fixtures.ts';

function apiServerDouble(initial: CustomResource[] = []): { client: ResourceWriter; resources: CustomResource[]; calls: string[] } {
  const resources = [...initial];
  const calls: string[] = [];
  const client: ResourceWriter = {
    async request<T>(method: string, path: string, options?: { body?: unknown }): Promise<T> {
      calls.push(`${method} ${path}`);
      const body = options?.body as CustomResource;
      if (method === 'POST') {
        const created: CustomResource = { ...body, metadata: { ...body.metadata, creationTimestamp: '2026-01-01T00:00:00Z' } };
        resources.push(created);
        return created as T;
      }
      if (method === 'PATCH') {
        const name = path.split('/').at(-1);
        const index = resources.findIndex((item) => item.metadata.name === name);
        const current = resources[index] as CustomResource;
        const patched: CustomResource = {
          ...current,
          metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, ...body.metadata?.annotations } },
          spec: { ...(current.spec as object), ...(body.spec as object) },
        };
        resources[index] = patched;
        return patched as T;
      }
      throw new Error(`unexpected ${method} ${path}`);
    },
  };
  return { client, resources, calls };
}

const SPEC = { type: 'cost', credit_limit: 50, periodic_reset: 'weekly', time_zone: 'UTC', conditions: [{ key: 'workspace_id', value: 'a' }], group_by: [{ key: 'api_key' }] };

describe('KubeUsageLimitStore', () => {
  test('creates labelled UsageLimitPolicy resources, lists them, archives them; kubectl-applied ones are read-only state', async () => {
    const api = apiServerDouble([resource('UsageLimitPolicy', 'from-git', SPEC), resource('UsageLimitPolicy', 'broken', { ...SPEC, type: 'dollars' })]);
    const store = new KubeUsageLimitStore({ client: api.client, namespace: 'aigw', resources: () => api.resources });
    assert.deepEqual(await store.list(), []);
    assert.deepEqual(store.statePolicies().map((policy) => policy.id), ['from-git']);
    assert.equal(await store.update('from-git', { status: 'archived' }), undefined);
    const created = await store.create({ type: 'tokens', credit_limit: 1000, periodic_reset: 'daily', time_zone: 'Europe/Paris', fail_open: false, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] });
    assert.deepEqual(api.calls, ['POST /apis/aigateway.dev/v1alpha1/namespaces/aigw/usagelimitpolicies']);
    assert.equal(api.resources.at(-1)?.metadata.labels?.[SOURCE_LABEL], 'api');
    assert.equal(api.resources.at(-1)?.kind, 'UsageLimitPolicy');
    assert.deepEqual(store.snapshot().map((policy) => policy.id), [created.id]);
    const archived = await store.update(created.id, { status: 'archived', credit_limit: 2000 });
    assert.equal(archived?.status, 'archived');
    assert.equal(archived?.credit_limit, 2000);
    assert.equal(archived?.time_zone, 'Europe/Paris');
  });
});
