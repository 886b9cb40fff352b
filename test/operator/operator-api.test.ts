// The operator's control-plane API: GatewayAPIKey authentication from the rendered state,
// policies backed by RateLimitPolicy resources (a POST creates one, kubectl-applied ones
// are read-only), prompts from Prompt resources.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { KubePolicyStore, SOURCE_LABEL, type ResourceWriter } from '../../operator/api/kube-policy-store.ts';
import { startOperatorApi, type OperatorApi } from '../../operator/api/operator-api-server.ts';
import { renderGatewayState } from '../../operator/reconcile/render-gateway-state.ts';
import type { CustomResource } from '../../operator/reconcile/resource-types.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import type { GatewayState } from '../../proxy/config/gateway-state.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { ADMIN_KEY, exampleSet, resource, secret } from './resource-fixtures.ts';

const INFERENCE_KEY = 'gw-inference-only-0123-012345678';

function stateOf(policies: CustomResource[]): GatewayState {
  const set = exampleSet();
  const result = renderGatewayState({
    ...set,
    resources: {
      ...set.resources,
      RateLimitPolicy: policies,
      GatewayAPIKey: [...set.resources.GatewayAPIKey, resource('GatewayAPIKey', 'apps', { keySecretRef: { name: 'app-keys', key: 'k' } })],
    },
    secrets: [...set.secrets, secret('app-keys', { k: INFERENCE_KEY }, 'gateway-key')],
  });
  const texts = serializeRenderedState(result);
  const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
  assert.ok(loaded.ok);
  return loaded.state;
}

describe('operator control-plane API', () => {
  const policies: CustomResource[] = [
    resource('RateLimitPolicy', 'from-git', { type: 'requests', unit: 'rpm', value: 10, conditions: [{ key: 'model', value: 'x' }], group_by: [{ key: 'api_key' }] }),
  ];
  const writes: Array<{ method: string; path: string; body: unknown }> = [];
  const client: ResourceWriter = {
    async request<T>(method: string, path: string, options?: { body?: unknown }): Promise<T> {
      writes.push({ method, path, body: options?.body });
      const body = options?.body as CustomResource;
      const created: CustomResource = { ...body, metadata: { ...body.metadata, creationTimestamp: '2025-03-01T00:00:00Z', resourceVersion: '1' } };
      policies.push(created); // what the informer would see next
      return created as T;
    },
  };
  let synced = false;
  let api: OperatorApi;
  const store = new KubePolicyStore({ client, namespace: 'aigw', resources: () => policies });

  before(async () => {
    api = await startOperatorApi({
      currentState: () => (synced ? stateOf(policies) : undefined),
      policyStore: store,
      statePolicies: () => store.statePolicies(),
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
    });
  });
  after(() => api.close());

  const call = async (method: string, path: string, key: string | undefined, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { ...(key === undefined ? {} : { 'x-gateway-api-key': key }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };
  const NEW_POLICY = { type: 'requests', unit: 'rpm', value: 5, conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'api_key' }] };

  test('before the informers synced it answers 503, OpenAI-shaped', async () => {
    const { status, json } = await call('GET', '/v1/policies/rate-limits', ADMIN_KEY);
    assert.equal(status, 503);
    assert.equal((json['error'] as { code: string }).code, 'AIGW_ERR_STORE_UNAVAILABLE');
    synced = true;
  });

  test('keys are checked against GatewayAPIKey resources, with scopes', async () => {
    assert.equal((await call('GET', '/v1/policies/rate-limits', undefined)).status, 401);
    assert.equal((await call('GET', '/v1/policies/rate-limits', 'gw-unknown-key-000-0123456789abc')).status, 401);
    assert.equal((await call('POST', '/v1/policies/rate-limits', INFERENCE_KEY, NEW_POLICY)).status, 403);
    assert.equal(writes.length, 0);
  });

  test('a POSTed policy becomes a RateLimitPolicy resource labelled as created through the API', async () => {
    const { status, json } = await call('POST', '/v1/policies/rate-limits', ADMIN_KEY, NEW_POLICY);
    assert.equal(status, 200);
    const write = writes.at(-1);
    assert.equal(write?.method, 'POST');
    assert.equal(write?.path, '/apis/aigateway.dev/v1alpha1/namespaces/aigw/ratelimitpolicies');
    const body = write?.body as CustomResource & { spec: Record<string, unknown> };
    assert.equal(body.metadata.name, json['id']);
    assert.equal(body.metadata.labels?.[SOURCE_LABEL], 'api');
    assert.deepEqual(JSON.parse(JSON.stringify(body.spec)), { ...NEW_POLICY, status: 'active', workspace_id: 'default' });
  });

  test('GET lists kubectl-applied and API-created policies; the kubectl-applied ones are read-only', async () => {
    const { json } = await call('GET', '/v1/policies/rate-limits', ADMIN_KEY);
    const ids = (json['data'] as Array<{ id: string }>).map((policy) => policy.id);
    assert.equal(ids.length, 2);
    assert.ok(ids.includes('from-git'));
    const patched = await call('PATCH', '/v1/policies/rate-limits/from-git', ADMIN_KEY, { value: 99 });
    assert.equal(patched.status, 409);
  });

  test('prompts are rendered from Prompt resources', async () => {
    const { status, json } = await call('POST', '/v1/prompts/welcome/render', INFERENCE_KEY, { variables: { tone: 'calm', question: 'hi' } });
    assert.equal(status, 200);
    assert.deepEqual((json['data'] as { messages: unknown[] }).messages[0], { role: 'system', content: 'You are calm.' });
  });
});
