// aigateway on a real single-node cluster, as a platform team uses it: the image built from
// the Dockerfile, `helm install` with running operator and proxy pods, resources applied with
// kubectl, requests through the proxy Service to a mock provider pod. Measures and prints
// config propagation (GatewayConfig change, new Provider, Secret rotation → every replica
// serving it), checks `Programmed`, disrupts under steady traffic (proxy pod deleted, rolling
// `helm upgrade` to a new image tag with a changed CRD, operator leader failover) and
// uninstalls. Needs root and `k8s-test-cluster.sh start-node` (test/cluster/ci-node.sh).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { load } from 'js-yaml';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Agent, request } from 'undici';
import { ROOT, run } from '../e2e/e2e-environment.ts';
import { eventually } from '../helpers/eventually.ts';
import { buildImage, clusterEnvironment, nodeAddress, openForwarder, percentile, type ClusterEnvironment } from './cluster-environment.ts';
import { startSteadyTraffic, type SteadyTraffic, type TrafficReport } from './steady-traffic.ts';

const environment = await clusterEnvironment();
const skip = typeof environment === 'string' ? `cluster suite skipped: ${environment}` : false;
if (skip !== false) console.log(skip);

const NS = process.env['AIGW_CLUSTER_NAMESPACE'] ?? 'aigw-cluster';
const RELEASE = 'aigw';
const FULL = 'aigw-aigateway';
const REPOSITORY = 'localhost/aigateway';
const TAG_1 = 'cluster-1';
const TAG_2 = 'cluster-2';
const CHART = join(ROOT, 'charts', 'aigateway');
const CRD_MARKER = '(cluster-suite upgrade marker)';
const results: Record<string, unknown> = {};

function log(line: string): void {
  console.log(`[cluster] ${line}`);
}

function trafficLine(report: TrafficReport): string {
  return `${report.sent} requests in ${report.seconds.toFixed(1)} s, ${report.ok} ok, ${report.failed} failed`;
}

describe('aigateway on a real Kubernetes cluster', { skip, timeout: 900_000 }, () => {
  const env = environment as ClusterEnvironment;
  const gatewayKey = `gw-${randomBytes(24).toString('hex')}`;
  let providerKey = `sk-mock-${randomBytes(16).toString('hex')}`;
  const direct = new Agent({ keepAliveTimeout: 10_000, connections: 4 });
  let serviceOrigin = '';
  let dir = '';
  let traffic: SteadyTraffic | undefined;

  const kubectl = (...args: string[]) => env.kubectl(['-n', NS, ...args]);
  const apply = (yaml: string) => env.kubectl(['-n', NS, 'apply', '-f', '-'], { input: yaml });

  const readyProxyIps = async (): Promise<string[]> => {
    const out = await kubectl('get', 'endpoints', `${FULL}-proxy`, '-o', 'jsonpath={.subsets[*].addresses[*].ip}');
    return out.stdout.split(/\s+/).filter((ip) => ip !== '').sort();
  };

  const podsReady = async (component: string, count: number): Promise<boolean> => {
    const out = await kubectl(
      'get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${component}`,
      '-o', 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
    );
    const lines = out.stdout.split('\n').filter((line) => line !== '');
    return lines.length === count && lines.every((line) => line === '|True');
  };

  /** One chat completion straight to a replica (pod IP), as the Service would route it. */
  const ask = async (ip: string, headers: Record<string, string>): Promise<{ status: number; content: string }> => {
    const response = await request(`http://${ip}:8787/v1/chat/completions`, {
      method: 'POST',
      dispatcher: direct,
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': gatewayKey, ...headers },
      body: JSON.stringify({ model: 'probe', messages: [{ role: 'user', content: 'which version?' }] }),
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
    });
    const text = await response.body.text();
    let content = '';
    try {
      content = (JSON.parse(text) as { choices?: Array<{ message?: { content?: string } }> }).choices?.[0]?.message?.content ?? '';
    } catch {
      content = text;
    }
    return { status: response.statusCode, content };
  };

  /** Applies a change and polls every ready replica until each serves it; ms from the apply. */
  const propagate = async (change: () => Promise<unknown>, headers: Record<string, string>, marker: string, pendingStatuses: number[]): Promise<number> => {
    const ips = await readyProxyIps();
    assert.ok(ips.length >= 2, `ready proxy replicas: ${ips.join(', ')}`);
    const started = performance.now();
    await change();
    const waiting = new Set(ips);
    const unexpected: string[] = [];
    const deadline = started + 30_000;
    while (waiting.size > 0 && performance.now() < deadline) {
      await Promise.all(
        [...waiting].map(async (ip) => {
          const answer = await ask(ip, headers).catch((error: Error) => ({ status: 0, content: error.message }));
          if (answer.status === 200 && answer.content.includes(marker)) waiting.delete(ip);
          else if (answer.status !== 200 && !pendingStatuses.includes(answer.status)) unexpected.push(`${ip}: HTTP ${answer.status} ${answer.content.slice(0, 160)}`);
        }),
      );
      if (waiting.size > 0) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.equal(waiting.size, 0, `replicas ${[...waiting].join(', ')} did not serve ${marker} within 30 s`);
    assert.deepEqual(unexpected, [], 'answers while the change propagated');
    return performance.now() - started;
  };

  /** RSS of every proxy and operator pod, from their own /metrics (for the chart's resource requests). */
  const residentMemory = async (): Promise<Record<string, number>> => {
    const out = await kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'jsonpath={range .items[*]}{.metadata.labels.app\\.kubernetes\\.io/component} {.status.podIP}{"\\n"}{end}');
    const memory: Record<string, number> = {};
    let index = 0;
    for (const line of out.stdout.split('\n').filter((entry) => entry !== '')) {
      const [component, ip] = line.split(' ');
      const port = 9090; // both serve /metrics on their metrics port (proxy.metricsPort, operator.metricsPort)
      const text = await (await request(`http://${ip}:${port}/metrics`, { dispatcher: direct })).body.text();
      const match = /^aigateway_(?:operator_)?process_resident_memory_bytes (\d+)/m.exec(text);
      memory[`${component}-${index++}`] = Math.round(Number(match?.[1] ?? 0) / 1024 / 1024);
    }
    return memory;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigw-cluster-'));
    const existing = await env.kubectl(['get', 'namespace', NS], { allowFailure: true });
    if (existing.code === 0) {
      await env.helm(['uninstall', RELEASE, '-n', NS, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', NS, '--wait=false'], { allowFailure: true });
      await env.kubectl(['-n', NS, 'delete', 'pods', '--all', '--grace-period=0', '--force'], { allowFailure: true });
      await eventually(async () => ((await env.kubectl(['get', 'namespace', NS], { allowFailure: true })).code !== 0 ? true : undefined), `namespace ${NS} deleted`, { timeoutMs: 180_000, intervalMs: 500 });
    }
    await env.kubectl(['create', 'namespace', NS]);
  });

  after(async () => {
    await traffic?.stop();
    await direct.close();
    await writeFile(join(tmpdir(), 'aigw-cluster-results.json'), JSON.stringify(results, null, 2)).catch(() => undefined);
    log(`results: ${JSON.stringify(results)}`);
    if (process.env['AIGW_CLUSTER_KEEP'] !== '1') {
      await env.helm(['uninstall', RELEASE, '-n', NS, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', NS, '--wait=false'], { allowFailure: true });
    }
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  test('the image: built from the Dockerfile with podman and loaded into the node, runs as uid 1000', async () => {
    let started = performance.now();
    await buildImage(env, `${REPOSITORY}:${TAG_1}`);
    const buildSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    await buildImage(env, `${REPOSITORY}:${TAG_2}`); // the same build (cached layers) under the upgrade's tag
    const retagSeconds = (performance.now() - started) / 1000;
    const inspect = (await env.podman(['image', 'inspect', `${REPOSITORY}:${TAG_1}`, '--format', '{{.Size}} {{.Config.User}}'])).stdout.trim().split(' ');
    const sizeMb = Number(inspect[0]) / 1e6;
    assert.equal(inspect[1], '1000:1000', 'the image runs as uid/gid 1000');
    results['image'] = { sizeMb: Math.round(sizeMb), user: inspect[1], buildAndLoadSeconds: Math.round(buildSeconds), secondTagSeconds: Math.round(retagSeconds) };
    log(`image ${REPOSITORY}:${TAG_1}: ${sizeMb.toFixed(0)} MB, user ${inspect[1]}, podman build + load into the node ${buildSeconds.toFixed(0)} s`);
  });

  test('helm install: operator and proxy pods Ready, resources applied, a request through the Service reaches the mock pod', async () => {
    // The documented CRD step (docs/kubernetes.md): also resets a CRD a previous run upgraded.
    const crds = (await env.helm(['show', 'crds', CHART])).stdout;
    await env.kubectl(['apply', '--server-side', '--field-manager=helm', '--force-conflicts', '-f', '-'], { input: crds });
    const mock = (await readFile(join(ROOT, 'test', 'cluster', 'mock-provider.yaml'), 'utf8')).replace('IMAGE', `${REPOSITORY}:${TAG_1}`);
    await apply(mock);
    const started = performance.now();
    await env.helm(
      [
        'install', RELEASE, CHART, '-n', NS, '--wait', '--timeout', '180s',
        '--set', `image.repository=${REPOSITORY}`, '--set', `image.tag=${TAG_1}`, '--set', 'image.pullPolicy=Never',
        '--set', 'state.egressAllow={*.svc.cluster.local}',
      ],
      { timeoutMs: 200_000 },
    );
    await eventually(async () => ((await podsReady('operator', 2)) && (await podsReady('proxy', 2)) ? true : undefined), '2 operator + 2 proxy pods Ready', { timeoutMs: 120_000, intervalMs: 500 });
    const installSeconds = (performance.now() - started) / 1000;
    await kubectl('rollout', 'status', 'deployment/mock-provider', '--timeout=120s');
    // The user's Secrets first (random keys, never from examples/), then the resources.
    await kubectl('create', 'secret', 'generic', 'mock-key', `--from-literal=apiKey=${providerKey}`);
    await kubectl('label', 'secret', 'mock-key', 'aigateway.dev/credential=provider');
    await kubectl('create', 'secret', 'generic', 'gateway-keys', `--from-literal=platform-admin=${gatewayKey}`);
    await kubectl('label', 'secret', 'gateway-keys', 'aigateway.dev/credential=gateway-key');
    const host = `http://mock-provider.${NS}.svc.cluster.local/v1`;
    await apply(`
apiVersion: aigateway.dev/v1alpha1
kind: GatewayAPIKey
metadata: { name: platform-admin }
spec: { workspace: default, scopes: [inference, admin], keySecretRef: { name: gateway-keys, key: platform-admin } }
---
apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: mock }
spec: { provider: openai, customHost: "${host}", apiKeySecretRef: { name: mock-key, key: apiKey } }
---
apiVersion: aigateway.dev/v1alpha1
kind: GatewayConfig
metadata: { name: steady }
spec: { provider: "@mock", override_params: { model: steady } }
---
apiVersion: aigateway.dev/v1alpha1
kind: GatewayConfig
metadata: { name: prop }
spec: { provider: "@mock", override_params: { model: g0 } }
`);
    await kubectl('wait', '--for=condition=Programmed', 'gatewayconfig/steady', 'gatewayconfig/prop', '--timeout=60s');
    const ip = (await kubectl('get', 'service', `${FULL}-proxy`, '-o', 'jsonpath={.spec.clusterIP}:{.spec.ports[0].port}')).stdout;
    serviceOrigin = `http://${ip}`;
    const response = await request(`${serviceOrigin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': gatewayKey, 'x-gateway-config': 'steady' },
      body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'hello' }] }),
    });
    const body = (await response.body.json()) as { model?: string; choices?: Array<{ message?: { content?: string } }> };
    assert.equal(response.statusCode, 200, JSON.stringify(body));
    assert.equal(body.choices?.[0]?.message?.content, `model=steady key=${providerKey.slice(-8)}`);
    // The proxy container runs as uid 1000 on a read-only root filesystem.
    const proxyPod = (await kubectl('get', 'pods', '-l', 'app.kubernetes.io/component=proxy', '-o', 'jsonpath={.items[0].metadata.name}')).stdout;
    const inPod = (await kubectl('exec', proxyPod, '--', 'node', '-e', "try { require('fs').writeFileSync('/app/x', 'x'); console.log(process.getuid(), 'writable') } catch (e) { console.log(process.getuid(), e.code) }")).stdout.trim();
    assert.equal(inPod, '1000 EROFS');
    // CRDs people can read: kubectl explain shows the descriptions the zod schemas carry.
    const explained = (await env.kubectl(['explain', 'gatewayconfig.spec.strategy'])).stdout;
    assert.match(explained, /How the targets are used/);
    assert.match(explained, /mode\s+<string> -required-\s+single, loadbalance/);
    results['install'] = { helmInstallToReadySeconds: Number(installSeconds.toFixed(1)) };
    log(`helm install → 2 operator + 2 proxy pods Ready in ${installSeconds.toFixed(1)} s; chat through ${serviceOrigin} → 200`);
  });

  test('drop-in clients: the openai and Anthropic SDKs with nothing but the Service URL and the gateway key', async () => {
    await apply(`
apiVersion: aigateway.dev/v1alpha1
kind: Model
metadata: { name: drop-in }
spec: { target: "@mock", model: drop-in-upstream }
`);
    await kubectl('wait', '--for=condition=Ready', 'models.aigateway.dev/drop-in', '--timeout=60s');
    // Every ready replica serves the Model before the Service is asked (it balances over them).
    for (const ip of await readyProxyIps()) {
      const replica = new OpenAI({ baseURL: `http://${ip}:8787/v1`, apiKey: gatewayKey, maxRetries: 0 });
      await eventually(async () => ((await replica.models.list()).data.some((model) => model.id === 'drop-in') ? true : undefined), `replica ${ip} lists the Model`, {
        timeoutMs: 30_000,
        intervalMs: 500,
      });
    }
    const expected = `model=drop-in-upstream key=${providerKey.slice(-8)}`;
    const openai = new OpenAI({ baseURL: `${serviceOrigin}/v1`, apiKey: gatewayKey, maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: 'drop-in', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(completion.choices[0]?.message.content, expected);
    const anthropic = new Anthropic({ baseURL: serviceOrigin, apiKey: gatewayKey, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'drop-in', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] });
    const first = message.content[0];
    assert.equal(first?.type === 'text' ? first.text : undefined, expected);
    const unknown = await openai.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hello' }] }).catch((caught: unknown) => caught);
    assert.ok(unknown instanceof OpenAI.NotFoundError, String(unknown));
    log('drop-in: openai and Anthropic SDKs with only the Service URL and the gateway key → 200; unknown model → 404');
  });

  test('the image in a pod (uid 1000, read-only root filesystem): production dependencies only, serving (start-up time reported)', async () => {
    // The production tree, as npm resolves it from the lockfile.
    const production = new Set(
      (await run('npm', ['--prefix', ROOT, 'ls', '--omit=dev', '--all', '--parseable'], { allowFailure: true, timeoutMs: 60_000, env: { npm_config_loglevel: 'silent' } })).stdout
        .split('\n')
        .filter((line) => line.includes('node_modules/'))
        .map((line) => line.slice(line.lastIndexOf('node_modules/') + 'node_modules/'.length)),
    );
    const devOnly = Object.keys((JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies).filter((name) => !production.has(name));
    // In a pod of the image as the chart runs it (uid 1000, read-only root filesystem, /tmp an
    // emptyDir): start `serve` three times and time each to its first /ready 200.
    const probe = `
      const fs = require('node:fs'); const { spawn } = require('node:child_process');
      const out = { uid: process.getuid() };
      try { fs.writeFileSync('/app/probe', 'x'); out.rootWritable = true; } catch (e) { out.rootWritable = e.code; }
      out.packages = fs.readdirSync('node_modules').flatMap((name) => name.startsWith('@') ? fs.readdirSync('node_modules/' + name).map((sub) => name + '/' + sub) : [name]).filter((name) => !name.startsWith('.'));
      fs.mkdirSync('/tmp/state', { recursive: true }); fs.writeFileSync('/tmp/state/gateway.yaml', '{}\\n');
      const runs = [];
      const once = (i) => new Promise((resolve) => {
        const t0 = performance.now();
        const child = spawn(process.execPath, ['bin/aigateway.js', 'serve', '--config', '/tmp/state/gateway.yaml', '--port', String(18787 + i), '--data-dir', '/tmp/data' + i], { stdio: 'ignore' });
        const poll = () => fetch('http://127.0.0.1:' + (18787 + i) + '/ready').then((r) => r.status === 200, () => false).then((ok) => {
          if (ok) { runs.push(Math.round(performance.now() - t0)); child.kill('SIGTERM'); child.on('exit', resolve); } else setTimeout(poll, 5);
        });
        poll();
      });
      (async () => { for (let i = 0; i < 5; i++) await once(i); out.startupMs = runs; console.log(JSON.stringify(out)); process.exit(0); })();
    `;
    await apply(JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'image-probe' },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 },
        containers: [{
          name: 'probe',
          image: `${REPOSITORY}:${TAG_1}`,
          imagePullPolicy: 'Never',
          command: ['node', '-e', probe],
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
        }],
        volumes: [{ name: 'tmp', emptyDir: {} }],
      },
    }));
    await eventually(async () => (/Succeeded|Failed/.test((await kubectl('get', 'pod', 'image-probe', '-o', 'jsonpath={.status.phase}')).stdout) ? true : undefined), 'the image probe pod', { timeoutMs: 120_000, intervalMs: 500 });
    const ran = await kubectl('logs', 'image-probe');
    await kubectl('delete', 'pod', 'image-probe', '--wait=false');
    const measured = JSON.parse(ran.stdout.trim().split('\n').at(-1) ?? '{}') as { uid: number; rootWritable: unknown; packages: string[]; startupMs: number[] };
    const sorted = [...measured.startupMs].sort((x, y) => x - y);
    results['imageInPod'] = { uid: measured.uid, rootWritable: measured.rootWritable, packages: measured.packages.length, startupMs: measured.startupMs, startupMedianMs: sorted[2] };
    log(`in a pod: uid ${measured.uid}, write to /app → ${String(measured.rootWritable)}, ${measured.packages.length} packages (none dev-only); serve → first /ready 200: ${measured.startupMs.join(', ')} ms (median ${sorted[2]} ms)`);
    assert.equal(measured.uid, 1000);
    assert.equal(measured.rootWritable, 'EROFS');
    assert.deepEqual(measured.packages.filter((name) => devOnly.includes(name) || !production.has(name)), [], 'only production dependencies in the image');
    assert.ok(production.size > 20);
    // Start-up time is reported (results, log), not asserted: a wall-clock bound fails on a busy
    // node; the target lives in `npm run bench:startup`. Each run did answer /ready.
    assert.equal(measured.startupMs.length, 5);
  });

  test('config propagation: GatewayConfig changes, new Providers and Secret rotations reach every replica, p95 ≤ 2 s, 0 failed requests', async () => {
    assert.ok(serviceOrigin !== '', 'the install test ran');
    traffic = startSteadyTraffic({ origin: serviceOrigin, headers: { 'x-gateway-api-key': gatewayKey, 'x-gateway-config': 'steady' }, expect: 'model=steady' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    traffic.take();
    const samples: Record<string, number[]> = { gatewayConfig: [], provider: [], secret: [] };
    for (let i = 1; i <= 10; i++) {
      const model = `g${i}-${randomBytes(3).toString('hex')}`;
      const ms = await propagate(() => kubectl('patch', 'gatewayconfig', 'prop', '--type=merge', '-p', JSON.stringify({ spec: { override_params: { model } } })), { 'x-gateway-config': 'prop' }, `model=${model}`, []);
      samples['gatewayConfig']?.push(ms);
      // A new Provider: unknown (4xx) until it propagates.
      if (i <= 5) {
        const name = `extra-${i}-${randomBytes(2).toString('hex')}`;
        const providerYaml = `apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: ${name} }
spec: { provider: openai, customHost: "http://mock-provider.${NS}.svc.cluster.local/v1", apiKeySecretRef: { name: mock-key, key: apiKey } }
`;
        samples['provider']?.push(await propagate(() => apply(providerYaml), { 'x-gateway-provider': `@${name}` }, 'model=probe', [400, 401, 404]));
        // A Secret rotation: the provider key the mock receives changes.
        providerKey = `sk-mock-${randomBytes(16).toString('hex')}`;
        // The rotated Secret keeps its opt-in label (written out, not left to apply's merge).
        const secretYaml = (await kubectl('create', 'secret', 'generic', 'mock-key', `--from-literal=apiKey=${providerKey}`, '--dry-run=client', '-o', 'yaml')).stdout.replace(
          /^metadata:\n/m,
          'metadata:\n  labels: { aigateway.dev/credential: provider }\n',
        );
        samples['secret']?.push(await propagate(() => apply(secretYaml), { 'x-gateway-config': 'prop' }, `key=${providerKey.slice(-8)}`, []));
      }
    }
    const all = Object.values(samples).flat();
    const report = traffic.take();
    const summary = Object.fromEntries(
      Object.entries({ ...samples, all }).map(([kind, values]) => [kind, { n: values.length, p50: Math.round(percentile(values, 50)), p95: Math.round(percentile(values, 95)), max: Math.round(Math.max(...values)) }]),
    );
    results['propagation'] = { ...summary, traffic: report };
    for (const [kind, stats] of Object.entries(summary)) log(`propagation ${kind}: n=${stats.n} p50=${stats.p50} ms p95=${stats.p95} ms max=${stats.max} ms (kubectl apply → every ready replica serving it)`);
    log(`steady traffic during the changes: ${trafficLine(report)}`);
    results['memory'] = await residentMemory();
    log(`resident memory (MiB) after the changes, under traffic: ${JSON.stringify(results['memory'])}`);
    assert.ok(all.length >= 20);
    assert.ok(percentile(all, 95) <= 2000, `p95 ${percentile(all, 95)} ms`);
    assert.equal(report.failed, 0, report.samples.join('\n'));
    assert.ok(report.ok > 0);
  });

  test('Programmed: kubectl wait --for=condition=Programmed returns only once every ready replica serves that generation', async () => {
    const waits: number[] = [];
    for (let i = 1; i <= 3; i++) {
      const model = `p${i}-${randomBytes(3).toString('hex')}`;
      const started = performance.now();
      await kubectl('patch', 'gatewayconfig', 'prop', '--type=merge', '-p', JSON.stringify({ spec: { override_params: { model } } }));
      await kubectl('wait', '--for=condition=Programmed', 'gatewayconfig/prop', '--timeout=30s');
      waits.push(performance.now() - started);
      // No polling: right when kubectl wait returned, every ready replica serves it.
      for (const ip of await readyProxyIps()) {
        const answer = await ask(ip, { 'x-gateway-config': 'prop' });
        assert.equal(answer.content.includes(`model=${model}`), true, `${ip} answered ${answer.status} ${answer.content}`);
      }
      const object = JSON.parse((await kubectl('get', 'gatewayconfig', 'prop', '-o', 'json')).stdout) as {
        metadata: { generation: number };
        status: { conditions: Array<{ type: string; status: string; observedGeneration: number }> };
      };
      const types = object.status.conditions.map((condition) => condition.type);
      assert.deepEqual(types.filter((type) => ['Accepted', 'ResolvedRefs', 'Ready', 'Programmed'].includes(type)).sort(), ['Accepted', 'Programmed', 'Ready', 'ResolvedRefs']);
      const programmed = object.status.conditions.find((condition) => condition.type === 'Programmed');
      assert.equal(programmed?.status, 'True');
      assert.equal(programmed?.observedGeneration, object.metadata.generation);
    }
    results['programmed'] = { applyToProgrammedMs: waits.map(Math.round) };
    log(`kubectl patch → kubectl wait Programmed returned: ${waits.map((ms) => Math.round(ms)).join(', ')} ms (then every replica served it)`);
    const columns = (await kubectl('get', 'gatewayconfigs')).stdout;
    log(`kubectl get gatewayconfigs:\n${columns}`);
    assert.match(columns.split('\n')[0] ?? '', /PROGRAMMED/);
  });

  test('disruption: a proxy pod deleted under steady traffic → 0 failed requests', async () => {
    assert.ok(traffic);
    traffic.take();
    const victim = (await kubectl('get', 'pods', '-l', 'app.kubernetes.io/component=proxy', '-o', 'jsonpath={.items[0].metadata.name}')).stdout;
    const started = performance.now();
    await kubectl('delete', 'pod', victim, '--wait=true', '--timeout=90s');
    await eventually(async () => ((await podsReady('proxy', 2)) ? true : undefined), 'two proxy pods Ready again', { timeoutMs: 120_000, intervalMs: 250 });
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // traffic on the new set too
    const report = traffic.take();
    results['deleteProxyPod'] = { ...report, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) };
    log(`proxy pod ${victim} deleted: ${trafficLine(report)}`);
    assert.equal(report.failed, 0, report.samples.join('\n'));
    assert.ok(report.ok > 20);
  });

  test('disruption + upgrade: helm upgrade to a new image tag (rolling) with a changed CRD, applied by the documented step → 0 failed requests, CRD updated', async () => {
    assert.ok(traffic);
    const chart = join(dir, 'aigateway');
    await cp(CHART, chart, { recursive: true });
    const crdFile = join(chart, 'crds', 'aigateway.dev_gatewayconfigs.yaml');
    const crdText = await readFile(crdFile, 'utf8');
    const kindDescription = (load(crdText) as { spec: { versions: Array<{ schema: { openAPIV3Schema: { description: string } } }> } }).spec.versions[0]?.schema.openAPIV3Schema.description ?? '';
    assert.ok(kindDescription !== '' && crdText.includes(kindDescription));
    await writeFile(crdFile, crdText.replace(`description: ${kindDescription}`, `description: ${kindDescription} ${CRD_MARKER}`));
    const describeCrd = async () => (await env.kubectl(['get', 'crd', 'gatewayconfigs.aigateway.dev', '-o', 'jsonpath={.spec.versions[0].schema.openAPIV3Schema.description}'])).stdout;
    assert.ok(!(await describeCrd()).includes(CRD_MARKER));
    traffic.take();
    const started = performance.now();
    // docs/kubernetes.md, "Upgrade": CRDs first (helm never upgrades crds/), then the release.
    await env.kubectl(['apply', '--server-side', '--field-manager=helm', '--force-conflicts', '-f', '-'], { input: (await env.helm(['show', 'crds', chart])).stdout });
    await env.helm(['upgrade', RELEASE, chart, '-n', NS, '--reuse-values', '--set', `image.tag=${TAG_2}`, '--wait', '--timeout', '180s'], { timeoutMs: 200_000 });
    await eventually(
      async () => {
        const images = (await kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'jsonpath={.items[*].spec.containers[0].image}')).stdout.split(' ');
        return images.length === 4 && images.every((image) => image.endsWith(`:${TAG_2}`)) && (await podsReady('proxy', 2)) && (await podsReady('operator', 2)) ? true : undefined;
      },
      `every pod on ${TAG_2}`,
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const report = traffic.take();
    results['helmUpgradeRolling'] = { ...report, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) };
    log(`helm upgrade ${TAG_1} → ${TAG_2} (rolling, CRD changed): ${trafficLine(report)}`);
    assert.ok((await describeCrd()).includes(CRD_MARKER), 'the CRD was updated');
    assert.equal(report.failed, 0, report.samples.join('\n'));
    assert.ok(report.ok > 20);
  });

  test('disruption: the operator leader fails over under steady traffic → 0 failed requests, the new leader programs changes', async () => {
    assert.ok(traffic);
    traffic.take();
    const holder = async () => (await kubectl('get', 'lease', `${FULL}-operator`, '-o', 'jsonpath={.spec.holderIdentity}')).stdout;
    const leader = await holder();
    assert.ok(leader !== '');
    const started = performance.now();
    await kubectl('delete', 'pod', leader, '--wait=false');
    const next = await eventually(async () => {
      const current = await holder();
      return current !== '' && current !== leader ? current : undefined;
    }, 'a new Lease holder', { timeoutMs: 60_000, intervalMs: 100 });
    const takeoverMs = performance.now() - started;
    const model = `f-${randomBytes(3).toString('hex')}`;
    await kubectl('patch', 'gatewayconfig', 'prop', '--type=merge', '-p', JSON.stringify({ spec: { override_params: { model } } }));
    await kubectl('wait', '--for=condition=Programmed', 'gatewayconfig/prop', '--timeout=30s');
    for (const ip of await readyProxyIps()) assert.ok((await ask(ip, { 'x-gateway-config': 'prop' })).content.includes(`model=${model}`));
    await eventually(async () => ((await podsReady('operator', 2)) ? true : undefined), 'two operator pods Ready', { timeoutMs: 120_000, intervalMs: 500 });
    const report = traffic.take();
    results['operatorFailover'] = { ...report, takeoverMs: Math.round(takeoverMs) };
    log(`operator leader ${leader} deleted: new leader ${next} after ${Math.round(takeoverMs)} ms; ${trafficLine(report)}`);
    assert.equal(report.failed, 0, report.samples.join('\n'));
  });

  test('helm uninstall leaves only the CRDs and the user resources (no Lease, no rendered state)', async () => {
    const report = await traffic?.stop();
    traffic = undefined;
    if (report !== undefined) log(`steady traffic, last phase: ${trafficLine(report)}`);
    await env.helm(['uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '120s'], { timeoutMs: 150_000 });
    const leftovers = async (): Promise<string[]> => {
      const out = await kubectl(
        'get', 'deployments,replicasets,pods,services,configmaps,secrets,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets,horizontalpodautoscalers,networkpolicies',
        '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.name}{"\\n"}{end}',
      );
      const userOwned = /^(Deployment\/mock-provider|ReplicaSet\/mock-provider-|Pod\/mock-provider-|Service\/mock-provider|Secret\/(mock-key|gateway-keys|default-token-)|ConfigMap\/kube-root-ca\.crt|ServiceAccount\/default)/;
      return out.stdout.split('\n').filter((line) => line !== '' && !userOwned.test(line));
    };
    const left = await eventually(async () => {
      const found = await leftovers();
      return found.length === 0 ? found : undefined;
    }, 'everything of the release garbage-collected', { timeoutMs: 90_000, intervalMs: 1000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${(await leftovers()).join(', ')}`);
    });
    assert.deepEqual(left, []);
    const crds = (await env.kubectl(['get', 'crds', '-o', 'name'])).stdout;
    for (const plural of ['gatewayconfigs', 'providers', 'ratelimitpolicies', 'prompts', 'guardrails', 'gatewayapikeys', 'models']) assert.match(crds, new RegExp(`${plural}\\.aigateway\\.dev`));
    // The documented CRD step leaves the CRDs to Helm's field manager: installing the chart
    // again (another team's release) does not conflict with them.
    const second = `${NS}-second`;
    await env.kubectl(['create', 'namespace', second]);
    try {
      const again = await env.helm(['install', 'second', CHART, '-n', second, '--set', `image.repository=${REPOSITORY}`, '--set', `image.tag=${TAG_2}`, '--set', 'image.pullPolicy=Never'], { allowFailure: true });
      assert.equal(again.code, 0, again.stderr);
    } finally {
      await env.helm(['uninstall', 'second', '-n', second, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', second, '--wait=false'], { allowFailure: true });
    }
    const kept = (await kubectl('get', 'gatewayconfigs,providers,gatewayapikeys', '-o', 'name')).stdout;
    assert.match(kept, /gatewayconfig.aigateway.dev\/prop/);
    log('helm uninstall: only the CRDs, the custom resources and the user\'s Secrets/mock remain');
  });

  // One history for the deployment: two proxy pods on a shared PostgreSQL (postgresql.existingSecret,
  // as production runs it) answer /v1/logs and /v1/analytics/summary alike. Its own release and
  // namespace, after the main one is gone. The node cannot pull a PostgreSQL image, so the pods
  // reach the machine's PostgreSQL (127.0.0.1:5432, trust) through a forwarder this process opens
  // on the node IP; the records are told apart from other runs' by a unique trace id.
  test('two proxy pods on a shared PostgreSQL: a request through one is listed and summed up by the other', async () => {
    const forwarder = await openForwarder(await nodeAddress(env), 5432);
    const databaseUrl = `postgres://postgres@${forwarder.address}/test`;
    const pgNs = `${NS}-pg`;
    const inNs = (...args: string[]) => env.kubectl(['-n', pgNs, ...args]);
    try {
      // A namespace left by an interrupted run goes first.
      await env.helm(['uninstall', 'pg', '-n', pgNs, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', pgNs, '--wait=true', '--timeout=180s'], { allowFailure: true, timeoutMs: 200_000 });
      await env.kubectl(['create', 'namespace', pgNs]);
      await inNs('create', 'secret', 'generic', 'aigateway-postgresql', `--from-literal=url=${databaseUrl}`);
      await env.helm(
        [
          'install', 'pg', CHART, '-n', pgNs, '--wait', '--timeout', '180s',
          '--set', `image.repository=${REPOSITORY}`, '--set', `image.tag=${TAG_2}`, '--set', 'image.pullPolicy=Never',
          '--set', 'state.egressAllow={*.svc.cluster.local}', '--set', 'proxy.replicaCount=2',
          '--set', 'postgresql.existingSecret=aigateway-postgresql', '--set', 'postgresql.key=url',
          // The forwarder listens on the node IP, outside any policy's reach.
          '--set', 'networkPolicy.enabled=false',
        ],
        { timeoutMs: 200_000 },
      );
      const args = (await inNs('get', 'deployment', 'pg-aigateway-proxy', '-o', 'jsonpath={.spec.template.spec.containers[0].args}')).stdout;
      assert.match(args, /--log-store=postgres/, 'the proxy keeps its request log on PostgreSQL');
      await inNs('create', 'secret', 'generic', 'mock-key', `--from-literal=apiKey=${providerKey}`);
      await inNs('label', 'secret', 'mock-key', 'aigateway.dev/credential=provider');
      await inNs('create', 'secret', 'generic', 'gateway-keys', `--from-literal=org-admin=${gatewayKey}`);
      await inNs('label', 'secret', 'gateway-keys', 'aigateway.dev/credential=gateway-key');
      await env.kubectl(['-n', pgNs, 'apply', '-f', '-'], {
        input: `
apiVersion: aigateway.dev/v1alpha1
kind: GatewayAPIKey
metadata: { name: org-admin }
spec: { workspace: default, scopes: [inference, org_admin], keySecretRef: { name: gateway-keys, key: org-admin } }
---
apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: mock }
spec: { provider: openai, customHost: "http://mock-provider.${NS}.svc.cluster.local/v1", apiKeySecretRef: { name: mock-key, key: apiKey } }
---
apiVersion: aigateway.dev/v1alpha1
kind: GatewayConfig
metadata: { name: shared }
spec: { provider: "@mock" }
`,
      });
      await inNs('wait', '--for=condition=Programmed', 'gatewayconfig/shared', '--timeout=120s');
      const ips = await eventually(async () => {
        const out = await inNs(
          'get', 'pods', '-l', 'app.kubernetes.io/instance=pg,app.kubernetes.io/component=proxy',
          '-o', 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}|{.status.podIP}{"\\n"}{end}',
        );
        const lines = out.stdout.split('\n').filter((line) => line !== '');
        return lines.length === 2 && lines.every((line) => line.startsWith('|True|')) ? lines.map((line) => line.slice('|True|'.length)) : undefined;
      }, 'two proxy pods Ready', { timeoutMs: 120_000, intervalMs: 500 });
      const [first, second] = ips as [string, string];
      const trace = `cluster-pg-${randomBytes(6).toString('hex')}`;
      const headers = { 'content-type': 'application/json', 'x-gateway-api-key': gatewayKey };
      // Programmed can precede a replica's reload by a moment: retry the first request until it serves.
      await eventually(async () => {
        const response = await request(`http://${first}:8787/v1/chat/completions`, {
          method: 'POST',
          dispatcher: direct,
          headers: { ...headers, 'x-gateway-config': 'shared', 'x-gateway-trace-id': trace, 'x-gateway-metadata': JSON.stringify({ trace }) },
          body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'hello' }] }),
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        await response.body.text();
        return response.statusCode === 200 ? true : undefined;
      }, 'a request through the first pod', { timeoutMs: 60_000, intervalMs: 500 });
      const read = async (ip: string, path: string): Promise<Record<string, unknown>> => {
        const response = await request(`http://${ip}:8787/v1${path}`, { dispatcher: direct, headers, headersTimeout: 10_000, bodyTimeout: 10_000 });
        const text = await response.body.text();
        assert.equal(response.statusCode, 200, text);
        return JSON.parse(text) as Record<string, unknown>;
      };
      // Only this run's records carry the trace id; each retried try is its own record.
      const listed = await eventually(async () => {
        const data = (await read(second, `/logs?trace_id=${trace}&status=200`))['data'] as Array<Record<string, unknown>>;
        return data.length >= 1 ? data : undefined;
      }, "the second pod to list the first pod's request", { timeoutMs: 30_000, intervalMs: 500 });
      assert.ok(listed.every((record) => record['trace_id'] === trace), JSON.stringify(listed));
      assert.deepEqual((await read(first, `/logs?trace_id=${trace}&status=200`))['data'], listed);
      const summaryPath = `/analytics/summary?metadata.trace=${trace}`;
      const summed = (await read(second, summaryPath))['total'] as { requests: number };
      assert.ok(summed.requests >= listed.length, JSON.stringify(summed));
      assert.deepEqual((await read(first, summaryPath))['total'], summed);
      log(`shared PostgreSQL (${databaseUrl}): a request through ${first} listed by ${second}; /v1/analytics/summary alike on both (${summed.requests} request(s))`);
    } finally {
      await env.helm(['uninstall', 'pg', '-n', pgNs, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', pgNs, '--wait=false'], { allowFailure: true });
      await forwarder.close();
    }
  });
});
