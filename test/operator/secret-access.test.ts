// Finding: the operator was a confused deputy. Anyone who may create a Provider could read
// every Secret of the namespace: a Provider naming `gateway-keys` (or the sealing key, or a
// database URL Secret) as its key, with a customHost of its choosing, rendered Ready and the
// value went to that host as a bearer token. The operator now reads only Secrets labelled
// for the referencing kind, never the gateway's own, and says why in the status.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { KubeClient } from '../../operator/k8s/kube-client.ts';
import { ResourceCache } from '../../operator/k8s/resource-cache.ts';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import type { SecretResource } from '../../operator/reconcile/resource-types.ts';
import { CREDENTIAL_LABEL } from '../../operator/reconcile/secret-access.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { eventually } from '../helpers/eventually.ts';
import { ADMIN_KEY, resource, resources, secret } from './resource-fixtures.ts';

const ATTACKER = 'https://attacker.example/v1';
const SEALING_KEY = 'sealing-key-0123456789-0123456789-abcdef';
const DATABASE_URL = 'postgres://aigateway:hunter2@pg.db:5432/aigateway';
const PROVIDER_KEY = 'sk-openai-0123456789abcdef';

/** The namespace: the gateway's own Secrets next to a properly labelled provider Secret. */
function namespaceSecrets(): SecretResource[] {
  return [
    secret('gateway-keys', { 'platform-admin': ADMIN_KEY }, 'gateway-key'),
    secret('openai-credentials', { apiKey: PROVIDER_KEY }, 'provider'),
    // Labelled by mistake, but named as the sealing key: still refused.
    secret('aigateway-secret-key', { 'secret-key': SEALING_KEY }, 'provider'),
    secret('aigateway-postgresql', { url: DATABASE_URL }),
    secret('labelled-store-url', { url: DATABASE_URL }, 'provider'),
    secret('unlabelled', { apiKey: 'sk-unlabelled-0123456789' }),
    { ...secret('sa-token', { token: 'eyJhbGciOi.token.value' }, 'provider'), type: 'kubernetes.io/service-account-token' },
  ];
}

function renderWith(references: Array<[string, { name: string; key: string }]>): RenderResult {
  return renderGatewayState({
    ...resources(
      references.map(([name, ref]) => resource('Provider', name, { provider: 'openai', customHost: ATTACKER, apiKeySecretRef: ref })),
      namespaceSecrets(),
    ),
    protectedSecrets: ['aigw-aigateway-credentials', 'aigateway-secret-key', 'aigateway-postgresql'],
  });
}

function conditions(result: RenderResult, kind: string, name: string): Record<string, { status: string; reason: string; message: string }> {
  const status = result.statuses.find((candidate) => candidate.kind === kind && candidate.name === name);
  assert.ok(status !== undefined, `no status for ${kind}/${name}`);
  return Object.fromEntries(status.conditions.map((condition) => [condition.type, condition]));
}

describe('the operator reads only Secrets that opt in', () => {
  const refused: Array<[string, { name: string; key: string }, RegExp]> = [
    ['the gateway keys Secret', { name: 'gateway-keys', key: 'platform-admin' }, /labelled aigateway\.dev\/credential=gateway-key/],
    ['the sealing key Secret (even labelled)', { name: 'aigateway-secret-key', key: 'secret-key' }, /gateway's own secrets/],
    ['the PostgreSQL URL Secret', { name: 'aigateway-postgresql', key: 'url' }, /gateway's own secrets/],
    ['a labelled Secret holding a store URL', { name: 'labelled-store-url', key: 'url' }, /store URL/],
    ['an unlabelled Secret', { name: 'unlabelled', key: 'apiKey' }, /not labelled aigateway\.dev\/credential=provider/],
    ['a service-account token Secret', { name: 'sa-token', key: 'token' }, /only Opaque/],
    ['the rendered credentials Secret', { name: 'aigw-aigateway-credentials', key: 'providers' }, /gateway's own secrets/],
  ];
  for (const [what, ref, message] of refused) {
    test(`a Provider naming ${what} renders nothing: ResolvedRefs=False, SecretNotPermitted`, () => {
      const result = renderWith([['exfiltrate', ref]]);
      assert.deepEqual(result.state.providers, []);
      assert.deepEqual(result.credentials.providers, {});
      const status = conditions(result, 'Provider', 'exfiltrate');
      assert.equal(status['ResolvedRefs']?.status, 'False');
      assert.equal(status['ResolvedRefs']?.reason, 'SecretNotPermitted');
      assert.match(status['ResolvedRefs']?.message ?? '', message);
      assert.equal(status['Ready']?.status, 'False');
      const texts = serializeRenderedState(result);
      for (const value of [ADMIN_KEY, SEALING_KEY, DATABASE_URL]) {
        assert.ok(!texts.stateYaml.includes(value) && !texts.credentialsYaml.includes(value), 'no secret value is rendered');
        assert.ok(!JSON.stringify(result.statuses).includes(value), 'nor echoed in a status');
      }
    });
  }

  test('a Provider naming a Secret labelled aigateway.dev/credential=provider renders Ready with its key', () => {
    const result = renderWith([['openai-prod', { name: 'openai-credentials', key: 'apiKey' }]]);
    assert.deepEqual(result.credentials.providers, { 'openai-prod': { apiKey: PROVIDER_KEY } });
    assert.equal(conditions(result, 'Provider', 'openai-prod')['Ready']?.status, 'True');
  });

  test('a GatewayAPIKey reads only Secrets labelled gateway-key', () => {
    const result = renderGatewayState(
      resources(
        [
          resource('GatewayAPIKey', 'admin', { keySecretRef: { name: 'gateway-keys', key: 'platform-admin' } }),
          resource('GatewayAPIKey', 'from-provider-secret', { keySecretRef: { name: 'openai-credentials', key: 'apiKey' } }),
        ],
        namespaceSecrets(),
      ),
    );
    assert.deepEqual(result.state.apiKeys.map((key) => key.id), ['admin']);
    assert.equal(conditions(result, 'GatewayAPIKey', 'from-provider-secret')['ResolvedRefs']?.reason, 'SecretNotPermitted');
  });

  test('the Secret informer asks the API server only for labelled Secrets', async () => {
    const secretQueries: URLSearchParams[] = [];
    const server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/secrets')) secretQueries.push(url.searchParams);
      response.writeHead(200, { 'content-type': 'application/json' });
      if (url.searchParams.get('watch') === 'true') return; // a watch that stays open
      response.end(JSON.stringify({ metadata: { resourceVersion: '1' }, items: [] }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    assert.ok(address !== null && typeof address === 'object');
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${address.port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'test-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const client = new KubeClient({ kubeConfig });
    const cache = new ResourceCache({ client, namespace: 'aigw', logger: pino({ level: 'silent' }), outputSecretName: 'out', onChange: () => undefined });
    try {
      cache.start();
      await eventually(() => cache.synced, 'the informers list once');
      assert.ok(secretQueries.length > 0);
      for (const query of secretQueries) assert.equal(query.get('labelSelector'), CREDENTIAL_LABEL);
    } finally {
      await cache.stop();
      await client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
