// The Helm chart: lint and template pass, `helm install` into the test API server creates
// every object, and the operator running with the chart's ServiceAccount token does its job
// while being denied what it does not need.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadAll, load } from 'js-yaml';
import { e2eEnvironment, ROOT, type E2eEnvironment } from './e2e-environment.ts';
import { eventually } from '../helpers/eventually.ts';
import { startOperatorProcess, type OperatorProcess } from './processes.ts';

const environment = await e2eEnvironment();
const skip = typeof environment === 'string' ? `e2e skipped: ${environment}` : false;
const CHART = join(ROOT, 'charts', 'aigateway');
const RELEASE = 'aigw';
const FULLNAME = 'aigw-aigateway';

interface Manifest {
  kind: string;
  apiVersion: string;
  metadata: { name: string; namespace?: string };
}

describe('Helm chart', { skip, timeout: 240_000 }, () => {
  const env = environment as E2eEnvironment;
  let namespace = '';
  let other = '';
  let dir = '';
  let operator: OperatorProcess | undefined;
  let tokenKubeconfig = '';

  before(async () => {
    namespace = await env.createNamespace('aigw-helm');
    other = await env.createNamespace('aigw-other');
    dir = await mkdtemp(join(tmpdir(), 'aigw-helm-'));
  });

  after(async () => {
    await operator?.stop();
    await env.helm(['uninstall', RELEASE, '-n', namespace, '--wait=false'], { allowFailure: true });
    for (const name of [namespace, other]) if (name !== '') await env.deleteNamespace(name);
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  test('helm lint --strict and helm template pass', async () => {
    await env.helm(['lint', CHART, '--strict']);
    const rendered = (await env.helm(['template', RELEASE, CHART, '-n', 'aigw', '--set', 'serviceMonitor.enabled=true', '--api-versions', 'monitoring.coreos.com/v1'])).stdout;
    const kinds = (loadAll(rendered) as Array<Manifest | null>).filter((doc): doc is Manifest => doc !== null).map((doc) => doc.kind).sort();
    assert.deepEqual(kinds, [
      'ConfigMap',
      'Deployment',
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'PodDisruptionBudget',
      'Role',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'Service',
      'Service',
      'ServiceAccount',
      'ServiceAccount',
      'ServiceMonitor',
    ]);
    const withCrds = (await env.helm(['template', RELEASE, CHART, '--include-crds'])).stdout;
    assert.equal((withCrds.match(/kind: CustomResourceDefinition/g) ?? []).length, 10);
  });

  test('helm install creates every object in the test API server', async () => {
    await env.helm(['install', RELEASE, CHART, '-n', namespace, '--set', `state.egressAllow={127.0.0.0/8}`, '--timeout', '60s']);
    const manifest = (await env.helm(['get', 'manifest', RELEASE, '-n', namespace])).stdout;
    const objects = (loadAll(manifest) as Array<Manifest | null>).filter((doc): doc is Manifest => doc !== null);
    assert.ok(objects.length >= 11, `${objects.length} objects`);
    for (const object of objects) {
      const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0] : undefined;
      const resource = group === undefined ? object.kind : `${object.kind}.${group}`;
      const found = await env.kubectl(['get', resource, object.metadata.name, '-n', object.metadata.namespace ?? namespace, '-o', 'name'], { allowFailure: true });
      assert.equal(found.code, 0, `${object.kind}/${object.metadata.name} missing: ${found.stderr}`);
    }
    for (const crd of ['gatewayconfigs', 'providers', 'ratelimitpolicies', 'prompts', 'guardrails', 'gatewayapikeys', 'models']) {
      await env.kubectl(['get', 'crd', `${crd}.aigateway.dev`, '-o', 'name']);
    }
  });

  test("the operator, with the chart's ServiceAccount token, renders the state and writes statuses", async () => {
    const serviceAccount = `${FULLNAME}-operator`;
    const token = (await env.kubectl(['-n', namespace, 'create', 'token', serviceAccount, '--duration=1h'])).stdout.trim();
    const admin = load(await readFile(env.kubeconfig, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
    tokenKubeconfig = join(dir, 'operator-kubeconfig');
    await writeFile(
      tokenKubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'test', cluster: { server: admin.clusters[0]?.cluster.server, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'operator', user: { token } }],
        contexts: [{ name: 'operator', context: { cluster: 'test', user: 'operator', namespace } }],
        'current-context': 'operator',
      }),
    );
    // The documented order: the user's Secrets first, then the examples (which hold none).
    await env.kubectl(['-n', namespace, 'create', 'secret', 'generic', 'openai-credentials', `--from-literal=apiKey=sk-${randomBytes(24).toString('hex')}`]);
    await env.kubectl(['-n', namespace, 'label', 'secret', 'openai-credentials', 'aigateway.dev/credential=provider']);
    await env.kubectl(['-n', namespace, 'create', 'secret', 'generic', 'gateway-keys', `--from-literal=platform-admin=gw-${randomBytes(24).toString('hex')}`]);
    await env.kubectl(['-n', namespace, 'label', 'secret', 'gateway-keys', 'aigateway.dev/credential=gateway-key']);
    await env.kubectl(['-n', namespace, 'apply', '-f', `${ROOT}/examples/`]);
    // The same settings as the chart's operator Deployment.
    operator = await startOperatorProcess({
      kubeconfig: tokenKubeconfig,
      namespace,
      identity: 'chart-operator',
      extraArgs: ['--configmap', `${FULLNAME}-state`, '--secret', `${FULLNAME}-credentials`, '--lease', `${FULLNAME}-operator`, '--owner-deployment', `${FULLNAME}-operator`],
    });
    await eventually(async () => {
      const result = await env.kubectl(['-n', namespace, 'get', 'configmap', `${FULLNAME}-state`, '-o', 'jsonpath={.data.gateway\\.yaml}'], { allowFailure: true });
      return result.code === 0 && result.stdout.includes('support-fallback') && result.stdout.includes('openai-prod') ? true : undefined;
    }, 'the rendered ConfigMap', { timeoutMs: 30_000, intervalMs: 100 }).catch((error: Error) => {
      throw new Error(`${error.message}\noperator output:\n${operator?.output().slice(-3000)}`);
    });
    await env.kubectl(['-n', namespace, 'wait', '--for=condition=Ready', 'aigwc,aigwp,aigwrl,aigwpr,aigwg,aigwk', '--all', '--timeout=30s']);
    const owner = (await env.kubectl(['-n', namespace, 'get', 'configmap', `${FULLNAME}-state`, '-o', 'jsonpath={.metadata.ownerReferences[0].name}'])).stdout;
    assert.equal(owner, `${FULLNAME}-operator`);
    const lease = (await env.kubectl(['-n', namespace, 'get', 'lease', `${FULLNAME}-operator`, '-o', 'jsonpath={.spec.holderIdentity}'])).stdout;
    assert.equal(lease, 'chart-operator');
    assert.doesNotMatch(operator.output(), /forbidden/i, 'no request of the operator was denied');
  });

  test('the ServiceAccount is denied what the operator does not need', async () => {
    const canI = async (...args: string[]): Promise<boolean> =>
      (await env.kubectl(['--kubeconfig', tokenKubeconfig, 'auth', 'can-i', ...args], { allowFailure: true, env: { KUBECONFIG: tokenKubeconfig } })).stdout.trim() === 'yes';
    const allowed = {
      'list secrets here': await canI('list', 'secrets', '-n', namespace),
      'watch providers here': await canI('watch', 'providers.aigateway.dev', '-n', namespace),
      'patch provider status': await canI('patch', 'providers.aigateway.dev', '--subresource=status', '-n', namespace),
      'create ratelimitpolicies': await canI('create', 'ratelimitpolicies.aigateway.dev', '-n', namespace),
      'patch the state ConfigMap': await canI('patch', `configmap/${FULLNAME}-state`, '-n', namespace),
    };
    const denied = {
      'get secrets in another namespace': await canI('get', 'secrets', '-n', other),
      'list pods': await canI('list', 'pods', '-n', namespace),
      'patch another ConfigMap': await canI('patch', 'configmap/something-else', '-n', namespace),
      'create any ConfigMap': await canI('create', 'configmaps', '-n', namespace),
      'delete secrets': await canI('delete', 'secrets', '-n', namespace),
      'update providers (spec)': await canI('update', 'providers.aigateway.dev', '-n', namespace),
      'delete ratelimitpolicies': await canI('delete', 'ratelimitpolicies.aigateway.dev', '-n', namespace),
      'create deployments': await canI('create', 'deployments', '-n', namespace),
      'list namespaces': await canI('list', 'namespaces'),
    };
    assert.deepEqual(allowed, Object.fromEntries(Object.keys(allowed).map((key) => [key, true])));
    assert.deepEqual(denied, Object.fromEntries(Object.keys(denied).map((key) => [key, false])));
    const pods = await env.kubectl(['--kubeconfig', tokenKubeconfig, 'get', 'pods', '-n', namespace], { allowFailure: true, env: { KUBECONFIG: tokenKubeconfig } });
    assert.notEqual(pods.code, 0);
    assert.match(pods.stderr, /forbidden/i);
  });

  test("the proxy's ServiceAccount may read and watch exactly its two state objects", async () => {
    const token = (await env.kubectl(['-n', namespace, 'create', 'token', `${FULLNAME}-proxy`, '--duration=1h'])).stdout.trim();
    const canI = async (...args: string[]): Promise<boolean> =>
      (await env.kubectl(['auth', 'can-i', '--token', token, '-n', namespace, ...args], { allowFailure: true })).stdout.trim() === 'yes';
    const allowed = {
      'watch the state ConfigMap': await canI('watch', `configmap/${FULLNAME}-state`),
      'list the state ConfigMap': await canI('list', `configmap/${FULLNAME}-state`),
      'get the credentials Secret': await canI('get', `secret/${FULLNAME}-credentials`),
      'watch the credentials Secret': await canI('watch', `secret/${FULLNAME}-credentials`),
    };
    const denied = {
      'list all ConfigMaps': await canI('list', 'configmaps'),
      'get another Secret': await canI('get', 'secret/openai-credentials'),
      'list all Secrets': await canI('list', 'secrets'),
      'patch the state ConfigMap': await canI('patch', `configmap/${FULLNAME}-state`),
      'list providers': await canI('list', 'providers.aigateway.dev'),
    };
    assert.deepEqual(allowed, Object.fromEntries(Object.keys(allowed).map((key) => [key, true])));
    assert.deepEqual(denied, Object.fromEntries(Object.keys(denied).map((key) => [key, false])));
  });
});
