// The proxy in a cluster, end to end: the operator renders, a kubelet-like mirror swaps the
// `..data` symlink of the proxy's directory, and the proxy (`serve --control-plane-url`)
// serves a GatewayConfig applied with kubectl within 2 s of the swap while a bounded request
// loop sees no failure. A policy POSTed through the proxy becomes a RateLimitPolicy and is
// enforced after the reload.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { e2eEnvironment, ROOT, type E2eEnvironment } from './e2e-environment.ts';
import { eventually } from '../helpers/eventually.ts';
import { startKubeletMirror, type KubeletMirror } from './kubelet-mirror.ts';
import { startOperatorProcess, startProxyProcess, type OperatorProcess, type ProxyProcess } from './processes.ts';

const environment = await e2eEnvironment();
const skip = typeof environment === 'string' ? `e2e skipped: ${environment}` : false;
const ADMIN_KEY = 'gw-e2e-admin-key-0123456789-0123';
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

describe('proxy hot reload from the rendered ConfigMap', { skip, timeout: 240_000 }, () => {
  const env = environment as E2eEnvironment;
  let namespace = '';
  let dir = '';
  let mock: MockOpenAI;
  let operator: OperatorProcess | undefined;
  let mirror: KubeletMirror | undefined;
  let proxy: ProxyProcess | undefined;

  const kubectl = (args: string[], input?: string) => env.kubectl(['-n', namespace, ...args], input === undefined ? {} : { input });
  const chat = async (config: string, metadata?: Record<string, string>): Promise<number> => {
    const response = await fetch(`${proxy?.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': ADMIN_KEY,
        'x-gateway-config': config,
        ...(metadata === undefined ? {} : { 'x-gateway-metadata': JSON.stringify(metadata) }),
      },
      body: CHAT,
    });
    await response.arrayBuffer();
    return response.status;
  };

  before(async () => {
    mock = await startMockOpenAI();
    await env.kubectl(['apply', '-f', `${ROOT}/crds/`]);
    await env.kubectl(['wait', '--for=condition=Established', 'crd', '-l', 'app.kubernetes.io/part-of=aigateway', '--timeout=60s']);
    namespace = await env.createNamespace('aigw-proxy');
    await kubectl(['create', 'secret', 'generic', 'mock-credentials', '--from-literal=apiKey=sk-mock']);
    await kubectl(['label', 'secret', 'mock-credentials', 'aigateway.dev/credential=provider']);
    await kubectl(['create', 'secret', 'generic', 'gateway-keys', `--from-literal=admin=${ADMIN_KEY}`]);
    await kubectl(['label', 'secret', 'gateway-keys', 'aigateway.dev/credential=gateway-key']);
    await kubectl(['apply', '-f', '-'], `apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: mock }
spec: { provider: openai, customHost: "${mock.url}", apiKeySecretRef: { name: mock-credentials, key: apiKey } }
---
apiVersion: aigateway.dev/v1alpha1
kind: GatewayAPIKey
metadata: { name: e2e-admin }
spec: { scopes: [inference, admin], keySecretRef: { name: gateway-keys, key: admin } }
---
apiVersion: aigateway.dev/v1alpha1
kind: GatewayConfig
metadata: { name: steady }
spec: { provider: "@mock" }
`);
    operator = await startOperatorProcess({ kubeconfig: env.kubeconfig, namespace, identity: 'op-proxy' });
    dir = await mkdtemp(join(tmpdir(), 'aigw-e2e-mount-'));
    mirror = await startKubeletMirror({ kubeconfig: env.kubeconfig, namespace, configMapName: 'aigateway-state', secretName: 'aigateway-credentials', dir: join(dir, 'state') });
    await eventually(() => mirror?.swapWhere((state) => state.includes('id: steady') && state.includes('e2e-admin')), 'the first rendered state on disk', { timeoutMs: 30_000, intervalMs: 100 });
    proxy = await startProxyProcess({
      configPath: mirror.configPath,
      credentialsPath: mirror.credentialsPath,
      controlPlaneUrl: operator.apiUrl,
      dataDir: join(dir, 'data'),
    });
  });

  after(async () => {
    await proxy?.stop();
    await mirror?.close();
    await operator?.stop();
    await mock?.close();
    if (namespace !== '') await env.deleteNamespace(namespace);
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  test('a GatewayConfig applied with kubectl is served within 2 s of the swap, with zero failed requests', async (t) => {
    assert.equal(await chat('steady'), 200);
    const statuses: number[] = [];
    let stop = false;
    const loop = (async () => {
      for (let i = 0; i < 5000 && !stop; i++) statuses.push(await chat('steady'));
    })();
    try {
      assert.equal(await chat('fresh'), 404);
      await kubectl(['apply', '-f', '-'], `apiVersion: aigateway.dev/v1alpha1
kind: GatewayConfig
metadata: { name: fresh }
spec:
  strategy: { mode: fallback }
  targets: [ { provider: "@mock", override_params: { model: gpt-4o } }, { provider: "@mock" } ]
`);
      const swap = await eventually(() => mirror?.swapWhere((state) => state.includes('id: fresh')), 'the swap carrying the new config', { timeoutMs: 20_000, intervalMs: 100 });
      await eventually(async () => ((await chat('fresh')) === 200 ? true : undefined), 'the proxy to serve the new config', { timeoutMs: 5_000, intervalMs: 20 });
      const tookMs = Date.now() - swap.at;
      assert.ok(tookMs <= 2000, `served ${tookMs} ms after the ..data swap`);
      t.diagnostic(`new config served ${tookMs} ms after the ..data swap`);
      // The served hash is the one the operator annotated.
      const ready = (await (await fetch(`${proxy?.origin}/ready`)).json()) as { config_hash: string };
      assert.equal(ready.config_hash, mirror?.swaps.at(-1)?.hash);
    } finally {
      stop = true;
      await loop;
    }
    assert.ok(statuses.length > 0);
    assert.deepEqual(statuses.filter((status) => status !== 200), [], `${statuses.length} requests in the loop`);
    t.diagnostic(`${statuses.length} requests in the loop, all 200`);
  });

  test('POST /v1/policies/rate-limits through the proxy creates a RateLimitPolicy, enforced after the reload', async () => {
    const servedHash = async (): Promise<string | undefined> => ((await (await fetch(`${proxy?.origin}/ready`)).json()) as { config_hash?: string }).config_hash;
    const before = await servedHash();
    const response = await fetch(`${proxy?.origin}/v1/policies/rate-limits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN_KEY },
      body: JSON.stringify({ type: 'requests', unit: 'rpm', value: 2, conditions: [{ key: 'metadata.e2e', value: 'limited' }], group_by: [{ key: 'api_key' }] }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const { id } = (await response.json()) as { id: string };
    const resource = JSON.parse((await kubectl(['get', 'ratelimitpolicy', id, '-o', 'json'])).stdout) as { metadata: { labels: Record<string, string> }; spec: { value: number } };
    assert.equal(resource.metadata.labels['aigateway.dev/source'], 'api');
    assert.equal(resource.spec.value, 2);
    const listed = await eventually(async () => {
      const list = (await (await fetch(`${proxy?.origin}/v1/policies/rate-limits`, { headers: { 'x-gateway-api-key': ADMIN_KEY } })).json()) as { data: Array<{ id: string }> };
      return list.data.some((policy) => policy.id === id) ? list : undefined;
    }, 'the policy in GET /v1/policies/rate-limits', { timeoutMs: 10_000, intervalMs: 100 });
    assert.ok(listed.data.length >= 1);
    // Enforced once the proxy has reloaded the state that carries it: a 429 within the minute.
    // Requests are counted only once the proxy serves that state (its /ready hash changed), so
    // none sent before the reload passes unlimited.
    await eventually(() => mirror?.swapWhere((state) => state.includes(`id: ${id}`)), 'the swap carrying the policy', { timeoutMs: 20_000, intervalMs: 100 });
    await eventually(async () => ((await servedHash()) !== before ? true : undefined), 'the proxy serving the state with the policy', { timeoutMs: 20_000, intervalMs: 100 });
    const limited: number[] = [];
    await eventually(async () => {
      const status = await chat('steady', { e2e: 'limited' });
      limited.push(status);
      return status === 429 ? true : undefined;
    }, 'a 429 from the new policy', { timeoutMs: 10_000, intervalMs: 20 });
    assert.ok(limited.filter((status) => status === 200).length <= 2, `statuses: ${limited.join(',')}`);
    assert.equal(await chat('steady'), 200, 'requests the policy does not match still pass');
  });

  test('POST /v1/prompts/{id}/render through the proxy renders a Prompt resource', async () => {
    await kubectl(['apply', '-f', `${ROOT}/examples/prompt.yaml`]);
    const rendered = await eventually(async () => {
      const response = await fetch(`${proxy?.origin}/v1/prompts/welcome/render`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN_KEY },
        body: JSON.stringify({ variables: { tone: 'terse', question: 'Where is my order?' } }),
      });
      return response.status === 200 ? ((await response.json()) as { data: { messages: Array<{ content: string }> } }) : undefined;
    }, 'the prompt to render', { timeoutMs: 15_000, intervalMs: 100 });
    assert.equal(rendered.data.messages[0]?.content, 'You are a terse support assistant.');
  });
});
