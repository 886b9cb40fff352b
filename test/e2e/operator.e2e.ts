// The operator against a real API server: CRDs and examples applied with kubectl, the
// rendered ConfigMap and Secret, Ready conditions, a broken Secret reference with its
// Event, deletion, garbage collection with the owner, and leader failover.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { load } from 'js-yaml';
import { e2eEnvironment, ROOT, type E2eEnvironment } from './e2e-environment.ts';
import { eventually } from '../helpers/eventually.ts';
import { startOperatorProcess, type OperatorProcess } from './processes.ts';

const environment = await e2eEnvironment();
const skip = typeof environment === 'string' ? `e2e skipped: ${environment}` : false;
const LEASE_MS = 3000;
const OPENAI_KEY = `sk-${randomBytes(24).toString('hex')}`;

describe('operator against the API server', { skip, timeout: 240_000 }, () => {
  const env = environment as E2eEnvironment;
  let namespace = '';
  const operators: OperatorProcess[] = [];

  const kubectl = (args: string[], input?: string) => env.kubectl(['-n', namespace, ...args], input === undefined ? {} : { input });
  const json = async <T>(args: string[]): Promise<T> => JSON.parse((await kubectl([...args, '-o', 'json'])).stdout) as T;
  const renderedState = async (): Promise<Record<string, unknown[]>> => {
    const configMap = await json<{ data: Record<string, string> }>(['get', 'configmap', 'aigateway-state']);
    return load(configMap.data['gateway.yaml'] ?? '') as Record<string, unknown[]>;
  };
  const ids = (state: Record<string, unknown[]>, key: string): string[] =>
    (state[key] ?? []).map((entry) => ((entry as { id?: string; slug?: string }).id ?? (entry as { slug?: string }).slug) as string);
  const leaseHolder = async (): Promise<string> =>
    (await kubectl(['get', 'lease', 'aigateway-operator', '-o', 'jsonpath={.spec.holderIdentity}'])).stdout.trim();

  before(async () => {
    await env.kubectl(['apply', '-f', `${ROOT}/crds/`]);
    await env.kubectl(['wait', '--for=condition=Established', 'crd', '-l', 'app.kubernetes.io/part-of=aigateway', '--timeout=60s']);
    namespace = await env.createNamespace('aigw-op');
    // A Deployment object to own the output (no kubelet: its pods never run, that is fine).
    await kubectl(['create', 'deployment', 'aigateway-operator', '--image=aigateway:e2e']);
    for (const identity of ['op-a', 'op-b']) {
      operators.push(
        await startOperatorProcess({
          kubeconfig: env.kubeconfig,
          namespace,
          identity,
          leaseDurationMs: LEASE_MS,
          extraArgs: ['--owner-deployment', 'aigateway-operator'],
        }),
      );
    }
  });

  after(async () => {
    await Promise.all(operators.map((operator) => operator.stop('SIGKILL')));
    if (namespace !== '') await env.deleteNamespace(namespace);
  });

  test('kubectl apply of the examples renders the ConfigMap and Secret, and every resource becomes Ready', async () => {
    // The documented order: the user's Secrets first, then the examples (which hold none).
    await kubectl(['create', 'secret', 'generic', 'openai-credentials', `--from-literal=apiKey=${OPENAI_KEY}`]);
    await kubectl(['label', 'secret', 'openai-credentials', 'aigateway.dev/credential=provider']);
    await kubectl(['create', 'secret', 'generic', 'gateway-keys', `--from-literal=platform-admin=gw-${randomBytes(24).toString('hex')}`]);
    await kubectl(['label', 'secret', 'gateway-keys', 'aigateway.dev/credential=gateway-key']);
    await kubectl(['apply', '-f', `${ROOT}/examples/`]);
    assert.equal(JSON.parse((await kubectl(['get', 'secret', 'openai-credentials', '-o', 'json'])).stdout).data.apiKey, Buffer.from(OPENAI_KEY).toString('base64'), 'the examples left the Secret alone');
    const state = await eventually(async () => {
      const rendered = await renderedState();
      const complete = ['configs', 'apiKeys', 'providers', 'prompts', 'rateLimitPolicies', 'guardrails'].every((key) => ids(rendered, key).length > 0);
      return complete && ids(rendered, 'providers').length === 2 ? rendered : undefined;
    }, 'the rendered state', { timeoutMs: 20_000, intervalMs: 100 });
    assert.deepEqual(ids(state, 'providers'), ['openai-backup', 'openai-prod']);
    assert.deepEqual(ids(state, 'prompts'), ['welcome']);
    assert.deepEqual(ids(state, 'rateLimitPolicies'), ['default-workspace-per-key']);
    assert.deepEqual(ids(state, 'guardrails'), ['no-ssn']);
    const secret = await json<{ data: Record<string, string> }>(['get', 'secret', 'aigateway-credentials']);
    const credentials = load(Buffer.from(secret.data['credentials.yaml'] ?? '', 'base64').toString('utf8')) as { providers: Record<string, { apiKey: string }> };
    assert.equal(credentials.providers['openai-prod']?.apiKey, OPENAI_KEY);
    await kubectl(['wait', '--for=condition=Ready', 'aigwc,aigwp,aigwrl,aigwpr,aigwg,aigwk', '--all', '--timeout=30s']);
    const configMap = await json<{ metadata: { annotations: Record<string, string>; ownerReferences?: Array<{ kind: string }>; managedFields: Array<{ manager: string }> } }>(['get', 'configmap', 'aigateway-state', '--show-managed-fields']);
    assert.match(configMap.metadata.annotations['aigateway.dev/config-hash'] ?? '', /^[0-9a-f]{16}$/);
    assert.ok(configMap.metadata.managedFields.some((field) => field.manager === 'aigateway-operator'), 'written by server-side apply');
    assert.equal(configMap.metadata.ownerReferences?.[0]?.kind, 'Deployment');
    const printed = (await kubectl(['get', 'aigwp', 'openai-prod'])).stdout;
    assert.match(printed, /PROVIDER\s+HOST\s+READY\s+REASON\s+AGE[\s\S]*openai-prod\s+openai\s+True\s+Rendered/);
  });

  test('a Provider whose Secret is missing shows ResolvedRefs=False/SecretNotFound and an Event, and is left out', async () => {
    await kubectl(['apply', '-f', '-'], `apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: broken }
spec: { provider: openai, apiKeySecretRef: { name: does-not-exist, key: apiKey } }
`);
    const condition = await eventually(async () => {
      const provider = await json<{ status?: { conditions?: Array<{ type: string; status: string; reason: string; observedGeneration: number }> } }>(['get', 'aigwp', 'broken']);
      return provider.status?.conditions?.find((item) => item.type === 'ResolvedRefs');
    }, 'the ResolvedRefs condition', { timeoutMs: 20_000, intervalMs: 100 });
    assert.deepEqual({ status: condition.status, reason: condition.reason, observedGeneration: condition.observedGeneration }, { status: 'False', reason: 'SecretNotFound', observedGeneration: 1 });
    const events = await eventually(async () => {
      const list = await json<{ items: Array<{ reason: string; type: string; involvedObject: { name: string } }> }>(['get', 'events', '--field-selector', 'involvedObject.name=broken']);
      return list.items.some((event) => event.reason === 'SecretNotFound') ? list.items : undefined;
    }, 'an Event for the broken Provider', { timeoutMs: 10_000, intervalMs: 100 });
    assert.ok(events.some((event) => event.type === 'Warning'));
    assert.ok(!ids(await renderedState(), 'providers').includes('broken'));
    assert.ok(ids(await renderedState(), 'providers').includes('openai-prod'), 'the rest still renders');
    // Creating the Secret repairs it once it opts in with the label (unlabelled, the operator never sees it).
    await kubectl(['create', 'secret', 'generic', 'does-not-exist', '--from-literal=apiKey=sk-now-here']);
    await kubectl(['label', 'secret', 'does-not-exist', 'aigateway.dev/credential=provider']);
    await kubectl(['wait', '--for=condition=Ready', 'aigwp/broken', '--timeout=20s']);
  });

  test('deleting a resource removes it from the rendered state', async () => {
    await kubectl(['delete', 'aigwpr', 'welcome']);
    await eventually(async () => (ids(await renderedState(), 'prompts').length === 0 ? true : undefined), 'the prompt to disappear', { timeoutMs: 20_000, intervalMs: 100 });
  });

  test('stopping the leader: the other operator takes over within the lease duration and keeps rendering', async () => {
    const holder = await eventually(async () => {
      const name = await leaseHolder();
      return name === '' ? undefined : name;
    }, 'a leader', { timeoutMs: 10_000, intervalMs: 100 });
    const leader = operators.find((operator) => operator.identity === holder);
    const follower = operators.find((operator) => operator.identity !== holder);
    assert.ok(leader !== undefined && follower !== undefined);
    const killedAt = Date.now();
    await leader.stop('SIGKILL'); // no clean release: the Lease must expire
    await eventually(async () => ((await leaseHolder()) === follower.identity ? true : undefined), 'the follower to take the Lease', { timeoutMs: LEASE_MS * 3, intervalMs: 50 });
    const tookMs = Date.now() - killedAt;
    // The follower waits out the lease from its last observation of a renewal, then needs
    // one retry period (2/15 of the lease) to write the Lease.
    assert.ok(tookMs <= LEASE_MS + (LEASE_MS * 2) / 15 + 500, `takeover took ${tookMs} ms (lease ${LEASE_MS} ms)`);
    await kubectl(['apply', '-f', `${ROOT}/examples/prompt.yaml`]);
    await eventually(async () => (ids(await renderedState(), 'prompts').includes('welcome') ? true : undefined), 'the new leader to render', { timeoutMs: 20_000, intervalMs: 100 });
  });

  test('a clean stop releases the Lease, and another replica takes it', async () => {
    const current = operators.find((operator) => operator.child.exitCode === null && operator.child.signalCode === null);
    assert.ok(current !== undefined);
    assert.equal(await leaseHolder(), current.identity);
    const replacement = await startOperatorProcess({
      kubeconfig: env.kubeconfig,
      namespace,
      identity: 'op-c',
      leaseDurationMs: LEASE_MS,
      extraArgs: ['--owner-deployment', 'aigateway-operator'],
    });
    operators.push(replacement);
    await current.stop('SIGTERM');
    assert.equal(current.child.exitCode, 0);
    assert.ok(['', 'op-c'].includes(await leaseHolder()), 'released on exit, not left to expire');
    await eventually(async () => ((await leaseHolder()) === 'op-c' ? true : undefined), 'op-c to take the released Lease', { timeoutMs: LEASE_MS * 3, intervalMs: 50 });
  });

  test('deleting the owner Deployment garbage-collects the rendered ConfigMap and Secret', async () => {
    await Promise.all(operators.map((operator) => operator.stop('SIGKILL')));
    await kubectl(['delete', 'deployment', 'aigateway-operator']);
    await eventually(async () => {
      const result = await env.kubectl(['-n', namespace, 'get', 'configmap/aigateway-state', 'secret/aigateway-credentials', '--ignore-not-found', '-o', 'name'], { allowFailure: true });
      return result.code === 0 && result.stdout.trim() === '' ? true : undefined;
    }, 'garbage collection of the output', { timeoutMs: 30_000, intervalMs: 100 });
  });
});
