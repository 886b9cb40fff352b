// The client-facing surfaces on a real single-node cluster, through two proxy pods that share
// what production shares: the Responses WebSocket mode through the proxy Service (and its
// drain on a rolling restart), an MCP session continued on the other pod and across a
// deleted pod (the session key from one Secret), a UsageLimitPolicy applied with kubectl and
// enforced by both pods on one Redis, and the console and /v1/configuration through the
// Service. Its own release and namespace; the node cannot pull a Redis image, so the pods
// reach the machine's Redis (127.0.0.1:6379) through a forwarder this process opens on the
// node IP. Needs root and `k8s-test-cluster.sh start-node` (test/cluster/ci-node.sh).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { ROOT } from '../e2e/e2e-environment.ts';
import { eventually } from '../helpers/eventually.ts';
import { closed, connect, isRefusal, open, recorder } from '../websocket/ws-client.ts';
import { buildImage, clusterEnvironment, nodeAddress, openForwarder, type ClusterEnvironment, type Forwarder } from './cluster-environment.ts';

const environment = await clusterEnvironment();
const skip = typeof environment === 'string' ? `cluster suite skipped: ${environment}` : false;
if (skip !== false) console.log(skip);

const NS = process.env['AIGW_CLUSTER_SURFACES_NAMESPACE'] ?? 'aigw-surfaces';
const RELEASE = 'surf';
const FULL = 'surf-aigateway';
const IMAGE = 'localhost/aigateway:cluster-surfaces';
const CHART = join(ROOT, 'charts', 'aigateway');
const REDIS_PORT = 6379;

function log(line: string): void {
  console.log(`[cluster:surfaces] ${line}`);
}

interface Pod {
  readonly name: string;
  readonly ip: string;
}

/** Rejects after `ms`: a hang guard for a promise the cluster should settle. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

function textOf(result: unknown): string {
  return ((result as { content?: Array<{ text?: string }> }).content ?? []).map((part) => part.text ?? '').join('');
}

describe('client surfaces on a real Kubernetes cluster: two proxy pods sharing Redis and the session key', { skip, timeout: 1_500_000 }, () => {
  const env = environment as ClusterEnvironment;
  const gatewayKey = `gw-${randomBytes(24).toString('hex')}`;
  const providerKey = `sk-mock-${randomBytes(16).toString('hex')}`;
  const direct = new Agent({ keepAliveTimeout: 10_000, connections: 8 });
  let serviceOrigin = '';
  let redisForwarder: Forwarder | undefined;

  const kubectl = (...args: string[]) => env.kubectl(['-n', NS, ...args]);
  const apply = (yaml: string) => env.kubectl(['-n', NS, 'apply', '-f', '-'], { input: yaml });

  /** The proxy pods that are Ready and not terminating, once there are exactly `count`. */
  const proxyPods = (count = 2): Promise<Pod[]> =>
    eventually(
      async () => {
        const out = await kubectl(
          'get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=proxy`,
          '-o', 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}|{.metadata.name}|{.status.podIP}{"\\n"}{end}',
        );
        const lines = out.stdout.split('\n').filter((line) => line !== '' && line.startsWith('|True|'));
        const all = out.stdout.split('\n').filter((line) => line !== '');
        if (lines.length !== count || all.length !== count) return undefined;
        return lines.map((line) => {
          const [, , name, ip] = line.split('|');
          return { name: name ?? '', ip: ip ?? '' };
        });
      },
      `${count} proxy pods Ready (and none terminating)`,
      { timeoutMs: 180_000, intervalMs: 500 },
    );

  const getJson = async (origin: string, path: string, key: string | null = gatewayKey): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> => {
    const response = await request(`${origin}${path}`, {
      dispatcher: direct,
      headers: key === null ? {} : { 'x-gateway-api-key': key },
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    const text = await response.body.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { text };
    }
    return { status: response.statusCode, body, headers: response.headers };
  };

  before(async () => {
    const started = performance.now();
    // A namespace left by an interrupted run goes first.
    if ((await env.kubectl(['get', 'namespace', NS], { allowFailure: true })).code === 0) {
      await env.helm(['uninstall', RELEASE, '-n', NS, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', NS, '--wait=true', '--timeout=180s'], { allowFailure: true, timeoutMs: 200_000 });
    }
    // Built from the working tree like the main file's tags (cached layers after it); its own
    // tag, so this file also runs alone.
    await buildImage(env, IMAGE);
    const imageSeconds = (performance.now() - started) / 1000;
    const crds = (await env.helm(['show', 'crds', CHART])).stdout;
    await env.kubectl(['apply', '--server-side', '--field-manager=helm', '--force-conflicts', '-f', '-'], { input: crds });
    await env.kubectl(['create', 'namespace', NS]);
    redisForwarder = await openForwarder(await nodeAddress(env), REDIS_PORT);
    // The Secrets the chart is pointed at (docs/kubernetes.md): the shared Redis and the key
    // that seals MCP sessions (and batch credentials), one for every proxy pod.
    await kubectl('create', 'secret', 'generic', 'aigateway-redis', `--from-literal=url=redis://${redisForwarder.address}`);
    await kubectl('create', 'secret', 'generic', 'aigateway-secret-key', `--from-literal=secret-key=${randomBytes(32).toString('base64')}`);
    for (const file of ['mock-provider.yaml', 'mcp-server.yaml']) await apply((await readFile(join(ROOT, 'test', 'cluster', file), 'utf8')).replace('IMAGE', IMAGE));
    const installed = performance.now();
    await env.helm(
      [
        'install', RELEASE, CHART, '-n', NS, '--wait', '--timeout', '180s',
        '--set', `image.repository=${IMAGE.split(':')[0]}`, '--set', `image.tag=${IMAGE.split(':')[1]}`, '--set', 'image.pullPolicy=Never',
        '--set', 'state.egressAllow={*.svc.cluster.local}', '--set', 'proxy.replicaCount=2',
        '--set', 'proxy.redis.existingSecret=aigateway-redis',
        '--set', 'proxy.secretKey.existingSecret=aigateway-secret-key',
        '--set', 'proxy.console=true',
        // The forwarder listens on the node IP, outside any policy's reach.
        '--set', 'networkPolicy.enabled=false',
      ],
      { timeoutMs: 200_000 },
    );
    await kubectl('rollout', 'status', 'deployment/mock-provider', '--timeout=120s');
    await kubectl('rollout', 'status', 'deployment/mcp-counter', '--timeout=120s');
    await kubectl('create', 'secret', 'generic', 'mock-key', `--from-literal=apiKey=${providerKey}`);
    await kubectl('label', 'secret', 'mock-key', 'aigateway.dev/credential=provider');
    await kubectl('create', 'secret', 'generic', 'gateway-keys', `--from-literal=platform-admin=${gatewayKey}`);
    await kubectl('label', 'secret', 'gateway-keys', 'aigateway.dev/credential=gateway-key');
    await apply(`
apiVersion: aigateway.dev/v1alpha1
kind: GatewayAPIKey
metadata: { name: platform-admin }
spec: { workspace: default, scopes: [inference, admin, org_admin], keySecretRef: { name: gateway-keys, key: platform-admin } }
---
apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: mock }
spec: { provider: openai, customHost: "http://mock-provider.${NS}.svc.cluster.local/v1", apiKeySecretRef: { name: mock-key, key: apiKey } }
---
apiVersion: aigateway.dev/v1alpha1
kind: Model
metadata: { name: codex-model }
spec: { target: "@mock", model: codex-upstream }
---
apiVersion: aigateway.dev/v1alpha1
kind: GatewayConfig
metadata: { name: budget }
spec: { provider: "@mock", override_params: { model: budget-upstream } }
`);
    await kubectl('wait', '--for=condition=Programmed', 'gatewayconfig/budget', '--timeout=120s');
    await kubectl('wait', '--for=condition=Ready', 'models.aigateway.dev/codex-model', '--timeout=60s');
    const ip = (await kubectl('get', 'service', `${FULL}-proxy`, '-o', 'jsonpath={.spec.clusterIP}:{.spec.ports[0].port}')).stdout;
    serviceOrigin = `http://${ip}`;
    // Every pod serves the Model before a test asks the Service (it balances over them).
    for (const pod of await proxyPods()) {
      await eventually(async () => {
        const models = await getJson(`http://${pod.ip}:8787`, '/v1/models');
        return ((models.body['data'] as Array<{ id: string }> | undefined) ?? []).some((model) => model.id === 'codex-model') ? true : undefined;
      }, `${pod.name} lists the Model`, { timeoutMs: 60_000, intervalMs: 500 });
    }
    log(`image ${IMAGE} built and loaded in ${imageSeconds.toFixed(0)} s; helm install (Redis ${redisForwarder.address} through the forwarder, shared session key, console on) → 2 proxy pods serving in ${((performance.now() - installed) / 1000).toFixed(1)} s`);
  });

  after(async () => {
    await direct.close();
    if (process.env['AIGW_CLUSTER_KEEP'] !== '1') {
      await env.helm(['uninstall', RELEASE, '-n', NS, '--wait=false'], { allowFailure: true });
      await env.kubectl(['delete', 'namespace', NS, '--wait=false'], { allowFailure: true });
    }
    await redisForwarder?.close();
  });

  // What Codex CLI sends on its Responses WebSocket upgrade (codex-rs, responses_websocket.rs).
  const codexHeaders = (): Record<string, string> => ({
    authorization: `Bearer ${gatewayKey}`,
    'openai-beta': 'responses_websockets=2026-02-06',
    originator: 'codex_cli_rs',
    session_id: '0199a3c1-0000-7000-8000-000000000001',
  });
  const wsUrl = (): string => `${serviceOrigin.replace(/^http/, 'ws')}/v1/responses`;
  const expectedText = `model=codex-upstream key=${providerKey.slice(-8)}`;

  /** One Codex-style turn on an open socket: response.create in, the SSE events out. */
  const turn = async (socket: WebSocket, input: string): Promise<string[]> => {
    const events = recorder(socket);
    const before = events.events.length;
    socket.send(JSON.stringify({ type: 'response.create', model: 'codex-model', store: false, input }));
    await within(events.until('response.completed', events.events.filter((event) => event['type'] === 'response.completed').length + 1), 30_000, 'response.completed');
    const mine = events.events.slice(before);
    const text = mine.filter((event) => event['type'] === 'response.output_text.delta').map((event) => event['delta']).join('');
    assert.equal(text, expectedText);
    return mine.map((event) => String(event['type']));
  };

  test('#28 Responses WebSocket mode through the proxy Service: a Codex-style upgrade runs a turn to response.completed; no key → 401 on the upgrade', async () => {
    const refused = await connect(wsUrl(), { headers: { 'openai-beta': 'responses_websockets=2026-02-06', originator: 'codex_cli_rs' } });
    assert.ok(isRefusal(refused), 'the upgrade without a key is refused over HTTP, not accepted');
    assert.equal(refused.status, 401, refused.body);
    assert.match(JSON.parse(refused.body).error.message as string, /key/i);
    const wrong = await connect(wsUrl(), { headers: { ...codexHeaders(), authorization: 'Bearer gw-not-a-key' } });
    assert.ok(isRefusal(wrong));
    assert.equal(wrong.status, 401, wrong.body);

    const started = performance.now();
    const socket = await open(wsUrl(), { headers: codexHeaders() });
    try {
      const types = await turn(socket, 'hello through the Service');
      assert.equal(types[0], 'response.created');
      assert.equal(types.at(-1), 'response.completed');
      assert.ok(types.includes('response.output_text.delta'), types.join(','));
      // Multi-turn on the same socket (store:false: the connection keeps the previous response).
      const completed = recorder(socket).events.find((event) => event['type'] === 'response.completed') as { response: { id: string } };
      const events = recorder(socket);
      const count = events.events.length;
      socket.send(JSON.stringify({ type: 'response.create', model: 'codex-model', store: false, previous_response_id: completed.response.id, input: 'and again' }));
      await within(events.until('response.completed', 2), 30_000, 'the second response.completed');
      assert.ok(!events.events.slice(count).some((event) => event['type'] === 'error'), JSON.stringify(events.events.slice(count)));
    } finally {
      socket.close(1000, 'done');
    }
    log(`WebSocket through ${serviceOrigin}: 401 without a key on the upgrade; Codex-style turn → response.completed, then a continuation (${Math.round(performance.now() - started)} ms for both)`);
  });

  test('#28 a rolling restart of the proxy Deployment: an open socket gets close 1001 with a reason (not a reset), and a new socket through the Service works', async () => {
    const socket = await open(wsUrl(), { headers: codexHeaders() });
    await turn(socket, 'before the restart');
    const errors: string[] = [];
    socket.on('error', (error) => errors.push(error.message));
    const closing = closed(socket);
    const before = (await proxyPods()).map((pod) => pod.name);
    const started = performance.now();
    await kubectl('rollout', 'restart', `deployment/${FULL}-proxy`);
    const close = await within(closing, 240_000, 'the close frame');
    const closeMs = performance.now() - started;
    assert.deepEqual(close, { code: 1001, reason: 'server shutting down' });
    assert.deepEqual(errors, [], 'no socket error (a reset would be code 1006 and an error)');
    await kubectl('rollout', 'status', `deployment/${FULL}-proxy`, '--timeout=240s');
    const after = (await proxyPods()).map((pod) => pod.name);
    assert.deepEqual(after.filter((name) => before.includes(name)), [], 'every proxy pod was replaced');
    const again = await open(wsUrl(), { headers: codexHeaders() });
    try {
      await turn(again, 'after the restart');
    } finally {
      again.close(1000, 'done');
    }
    log(`rolling restart: the open socket got close ${close.code} "${close.reason}" ${(closeMs / 1000).toFixed(1)} s after kubectl rollout restart; rollout done in ${((performance.now() - started) / 1000).toFixed(1)} s; a new socket through the Service ran a turn`);
  });

  test('#29 an MCP session opened on one proxy pod continues on the other and across a deleted pod (session key from one Secret)', async () => {
    const key = (await kubectl('get', 'deployment', `${FULL}-proxy`, '-o', 'jsonpath={.spec.template.spec.containers[0].env[?(@.name=="AIGATEWAY_SECRET_KEY")].valueFrom.secretKeyRef.name}')).stdout;
    assert.equal(key, 'aigateway-secret-key', 'both pods take the session key from the same Secret');
    await apply(`
apiVersion: aigateway.dev/v1alpha1
kind: MCPServer
metadata: { name: counter }
spec: { url: "http://mcp-counter.${NS}.svc.cluster.local/mcp", transport: streamable-http }
`);
    const clients: Array<{ client: Client; transport: StreamableHTTPClientTransport }> = [];
    const connectTo = async (pod: Pod, sessionId?: string) => {
      const transport = new StreamableHTTPClientTransport(new URL(`http://${pod.ip}:8787/mcp/counter`), { requestInit: { headers: { authorization: `Bearer ${gatewayKey}` } }, sessionId });
      const client = new Client({ name: 'cluster-suite', version: '1.0.0' });
      await client.connect(transport);
      clients.push({ client, transport });
      return { client, transport };
    };
    try {
      await kubectl('wait', '--for=condition=Ready', 'mcpservers.aigateway.dev/counter', '--timeout=60s');
      const [a, b] = (await proxyPods()) as [Pod, Pod];
      // Each pod serves the MCPServer (its tools listed) before the session starts.
      for (const pod of [a, b]) {
        await eventually(async () => {
          const probe = await connectTo(pod);
          const names = (await probe.client.listTools()).tools.map((tool) => tool.name);
          await probe.transport.terminateSession().catch(() => undefined);
          return names.includes('count') ? true : undefined;
        }, `${pod.name} serves the MCPServer`, { timeoutMs: 60_000, intervalMs: 500 });
      }
      const started = performance.now();
      const opened = await connectTo(a);
      const sessionId = opened.transport.sessionId;
      assert.ok(sessionId !== undefined && sessionId.length > 40, 'a sealed session id');
      const first = textOf(await opened.client.callTool({ name: 'count', arguments: {} }));
      const upstream = /session=(\S+) count=1 /.exec(first)?.[1];
      assert.ok(upstream !== undefined, first);
      assert.ok(!sessionId.includes(upstream), 'the upstream session id is sealed, not shown');

      const onB = await connectTo(b, sessionId);
      assert.match(textOf(await onB.client.callTool({ name: 'count', arguments: {} })), new RegExp(`session=${upstream} count=2 `), 'pod B continues the same upstream session');
      assert.deepEqual((await onB.client.listTools()).tools.map((tool) => tool.name), ['count']);

      await kubectl('delete', 'pod', a.name, '--wait=true', '--timeout=90s');
      assert.match(textOf(await onB.client.callTool({ name: 'count', arguments: {} })), new RegExp(`session=${upstream} count=3 `), 'pod B, after pod A is gone');
      const replaced = await proxyPods();
      const fresh = replaced.find((pod) => pod.name !== b.name);
      assert.ok(fresh !== undefined && fresh.name !== a.name, JSON.stringify(replaced));
      const onFresh = await connectTo(fresh, sessionId);
      assert.match(textOf(await onFresh.client.callTool({ name: 'count', arguments: {} })), new RegExp(`session=${upstream} count=4 `), 'the replacement pod continues it too');
      // A session id from elsewhere (tampered) is refused with the MCP "session not found".
      const tampered = await request(`http://${b.ip}:8787/mcp/counter`, {
        method: 'POST',
        dispatcher: direct,
        headers: { authorization: `Bearer ${gatewayKey}`, 'mcp-session-id': `${sessionId.slice(0, -4)}AAAA`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(tampered.statusCode, 404, await tampered.body.text());
      log(`MCP session (official SDK client): opened on ${a.name}, tools/call continued on ${b.name} (same upstream session), ${a.name} deleted, continued on ${b.name} and on its replacement ${fresh.name}: count=1..4 on one upstream session (${Math.round(performance.now() - started)} ms)`);
    } finally {
      for (const { client, transport } of clients) {
        await transport.terminateSession().catch(() => undefined);
        await client.close().catch(() => undefined);
      }
      await kubectl('delete', 'mcpserver', 'counter', '--ignore-not-found');
    }
  });

  test('#30 a UsageLimitPolicy applied with kubectl is enforced by both proxy pods on the shared Redis: total within limit + one reservation cap, then 429 budget_exceeded on both', async () => {
    const run = randomBytes(4).toString('hex');
    const name = `cluster-budget-${run}`;
    const limit = 120; // tokens; the mock answers 8 (3 prompt + 5 completion) per request
    const cap = 40; // max_reservation: the most one request may reserve
    const redis = new Redis(REDIS_PORT, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await apply(`
apiVersion: aigateway.dev/v1alpha1
kind: UsageLimitPolicy
metadata: { name: ${name} }
spec:
  name: cluster suite ${run}
  type: tokens
  credit_limit: ${limit}
  max_reservation: ${cap}
  periodic_reset: daily
  fail_open: false
  conditions: [{ key: metadata.budget_run, value: "${run}" }]
  group_by: [{ key: api_key }]
`);
      await kubectl('wait', '--for=condition=Ready', `usagelimitpolicies.aigateway.dev/${name}`, '--timeout=60s');
      const pods = await proxyPods();
      for (const pod of pods) {
        await eventually(async () => {
          const budgets = await getJson(`http://${pod.ip}:8787`, '/v1/analytics/budgets');
          return ((budgets.body['data'] as Array<{ policy_id: string }> | undefined) ?? []).some((policy) => policy.policy_id === name) ? true : undefined;
        }, `${pod.name} enforces ${name}`, { timeoutMs: 60_000, intervalMs: 500 });
      }
      const ask = async (pod: Pod) => {
        const response = await request(`http://${pod.ip}:8787/v1/chat/completions`, {
          method: 'POST',
          dispatcher: direct,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${gatewayKey}`, 'x-gateway-config': 'budget', 'x-gateway-metadata': JSON.stringify({ budget_run: run }) },
          body: JSON.stringify({ model: 'any', max_tokens: 10, messages: [{ role: 'user', content: 'spend a little' }] }),
          headersTimeout: 15_000,
          bodyTimeout: 15_000,
        });
        const text = await response.body.text();
        return { pod: pod.name, status: response.statusCode, text, policy: response.headers['x-gateway-budget-policy'] };
      };
      // A burst spread over both pods, eight at a time. The policy fails closed: a Redis call
      // past the store's command timeout (100 ms; the forwarder runs in this process on a
      // busy machine) is a 503, never an admission without a reservation.
      const started = performance.now();
      const answers: Array<Awaited<ReturnType<typeof ask>>> = [];
      for (let wave = 0; wave < 6; wave++) answers.push(...(await Promise.all(Array.from({ length: 8 }, (_, i) => ask(pods[i % 2] as Pod)))));
      const burstMs = performance.now() - started;
      // Then each pod until it refuses with budget_exceeded (a 503 is retried, a 200 counted).
      for (const pod of pods) {
        await eventually(async () => {
          const next = await ask(pod);
          answers.push(next);
          return next.status === 429 ? true : undefined;
        }, `${pod.name} to refuse with 429`, { timeoutMs: 30_000, intervalMs: 250 });
      }
      const admitted = answers.filter((answer) => answer.status === 200);
      const refused = answers.filter((answer) => answer.status === 429);
      const unavailable = answers.filter((answer) => answer.status === 503);
      assert.deepEqual(answers.filter((answer) => ![200, 429, 503].includes(answer.status)).map((answer) => `${answer.status} ${answer.text.slice(0, 200)}`), []);
      for (const answer of unavailable) assert.equal((JSON.parse(answer.text) as { error: { code: string } }).error.code, 'AIGW_ERR_STORE_UNAVAILABLE', answer.text);
      assert.deepEqual(admitted.filter((answer) => answer.policy !== name).map((answer) => `${answer.pod}: ${String(answer.policy)}`), [], 'every admitted answer names the policy (it was reserved)');
      for (const pod of pods) assert.ok(admitted.some((answer) => answer.pod === pod.name), `${pod.name} admitted some`);
      for (const answer of refused) {
        const error = (JSON.parse(answer.text) as { error: { type: string; code: string; message: string } }).error;
        assert.equal(error.type, 'budget_exceeded');
        assert.equal(error.code, 'AIGW_ERR_BUDGET_EXCEEDED');
        assert.ok(error.message.includes(name), error.message);
      }
      for (const pod of pods) assert.equal(answers.filter((answer) => answer.pod === pod.name).at(-1)?.status, 429, `${pod.name} refuses at the end`);
      const spentTokens = admitted.length * 8;
      assert.ok(spentTokens <= limit + cap, `${admitted.length} admitted = ${spentTokens} tokens > ${limit} + ${cap}`);
      // Both pods read the same spend from Redis: what was settled (a settlement lost to a
      // store timeout leaves its reservation counted instead, on the safe side).
      const spentOn = async (pod: Pod) => {
        const data = (await getJson(`http://${pod.ip}:8787`, '/v1/analytics/budgets')).body['data'] as Array<{ policy_id: string; spent: number; groups: Array<{ reserved: number }> }>;
        const policy = data.find((entry) => entry.policy_id === name);
        return policy === undefined ? undefined : { spent: policy.spent, reserved: policy.groups.reduce((sum, group) => sum + group.reserved, 0) };
      };
      const settled = await eventually(async () => {
        const spends = await Promise.all(pods.map(spentOn));
        const [first, second] = spends;
        return first !== undefined && JSON.stringify(first) === JSON.stringify(second) && (first.spent === spentTokens || first.reserved > 0) ? first : undefined;
      }, 'both pods to report the same spend', { timeoutMs: 30_000, intervalMs: 500 });
      assert.ok(settled.spent <= spentTokens && settled.spent + settled.reserved <= limit, JSON.stringify(settled));
      const perPod = pods.map((pod) => `${pod.name}: ${admitted.filter((answer) => answer.pod === pod.name).length} admitted, ${refused.filter((answer) => answer.pod === pod.name).length} refused, ${unavailable.filter((answer) => answer.pod === pod.name).length} × 503`);
      log(`UsageLimitPolicy ${name} (tokens, limit ${limit}, max_reservation ${cap}, fail closed) applied with kubectl: ${answers.length} requests over both pods (the first 48 in ${Math.round(burstMs)} ms), ${admitted.length} admitted (${spentTokens} tokens ≤ ${limit} + ${cap}), ${refused.length} × 429 budget_exceeded, ${unavailable.length} × 503 store unavailable; ${perPod.join('; ')}; both pods report spent ${settled.spent} (+${settled.reserved} reserved) and end refusing`);
      // status.spend: the operator's leader reads the same counters from Redis (docs/budgets.md),
      // polled only where the CRD has it (another change).
      const schema = (await env.kubectl(['get', 'crd', 'usagelimitpolicies.aigateway.dev', '-o', 'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.spend}'])).stdout;
      if (schema.trim() !== '') {
        const statusStarted = performance.now();
        const status = await eventually(async () => {
          const object = JSON.parse((await kubectl('get', 'usagelimitpolicy', name, '-o', 'json')).stdout) as {
            status?: { spend?: { unit: string; limit: number; spent: number; remaining: number; groups: number }; conditions?: Array<{ type: string; status: string; reason: string }> };
          };
          return object.status?.spend?.spent === settled.spent ? object.status : undefined;
        }, `${name} status.spend.spent = ${settled.spent}`, { timeoutMs: 120_000, intervalMs: 1000 });
        assert.equal(status.spend?.unit, 'tokens');
        assert.equal(status.spend?.limit, limit);
        assert.equal(status.spend?.groups, 1);
        assert.equal(status.spend?.remaining, limit - settled.spent - settled.reserved);
        const conditions = (status.conditions ?? []).filter((condition) => ['ThresholdReached', 'Exhausted'].includes(condition.type)).map((condition) => `${condition.type}=${condition.status}/${condition.reason}`);
        log(`UsageLimitPolicy ${name} status.spend ${JSON.stringify(status.spend)} (${Math.round(performance.now() - statusStarted)} ms after the burst was read back); ${conditions.join(', ')}`);
      } else log('UsageLimitPolicy status.spend is not in the CRD yet: not checked');
    } finally {
      await kubectl('delete', 'usagelimitpolicy', name, '--ignore-not-found');
      // Its counters in the machine's Redis (they would expire after the day anyway).
      try {
        await redis.connect();
        const keys: string[] = [];
        let cursor = '0';
        do {
          const [next, found] = await redis.scan(cursor, 'MATCH', `aigw:{budget}:${name}:*`, 'COUNT', 1000);
          cursor = next;
          keys.push(...found);
        } while (cursor !== '0');
        if (keys.length > 0) await redis.del(...keys);
      } catch {
        // Redis cleanup is best effort; the counters are daily.
      }
      redis.disconnect();
    }
  });

  test('#31 the console through the proxy Service: the page with its strict CSP, and /v1/configuration listing the providers of the applied resources, their source resources and both pods\' hashes', async () => {
    const page = await request(`${serviceOrigin}/console/`, { dispatcher: direct });
    const html = await page.body.text();
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const csp = String(page.headers['content-security-policy']);
    for (const directive of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'"]) assert.ok(csp.includes(directive), `${directive} in ${csp}`);
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
    assert.match(html, /console\.js/);
    const script = await request(`${serviceOrigin}/console/console.js`, { dispatcher: direct });
    await script.body.text();
    assert.equal(script.statusCode, 200);
    const bare = await request(`${serviceOrigin}/console`, { dispatcher: direct });
    await bare.body.text();
    assert.equal(bare.statusCode, 302);
    assert.equal(bare.headers['location'], 'console/', 'a relative redirect (keeps an Ingress prefix)');

    // A second Provider applied now: both pods' configuration lists it.
    await apply(`
apiVersion: aigateway.dev/v1alpha1
kind: Provider
metadata: { name: console-extra }
spec: { provider: openai, customHost: "http://mock-provider.${NS}.svc.cluster.local/v1", apiKeySecretRef: { name: mock-key, key: apiKey } }
`);
    try {
      await kubectl('wait', '--for=condition=Ready', 'providers.aigateway.dev/console-extra', '--timeout=60s');
      assert.equal((await getJson(serviceOrigin, '/v1/configuration', null)).status, 401);
      const pods = await proxyPods();
      const served = new Map<string, Record<string, unknown>>();
      for (const pod of pods) {
        served.set(pod.name, await eventually(async () => {
          const answer = await getJson(`http://${pod.ip}:8787`, '/v1/configuration');
          const slugs = ((answer.body['providers'] as Array<{ slug: string }> | undefined) ?? []).map((provider) => provider.slug);
          return answer.status === 200 && slugs.includes('mock') && slugs.includes('console-extra') ? answer.body : undefined;
        }, `${pod.name} lists both Providers`, { timeoutMs: 60_000, intervalMs: 500 }));
      }
      const viaService = await getJson(serviceOrigin, '/v1/configuration');
      assert.equal(viaService.status, 200);
      const text = JSON.stringify(viaService.body);
      assert.ok(!text.includes(providerKey) && !text.includes(gatewayKey), 'no credential in the configuration');
      const providers = viaService.body['providers'] as Array<{ slug: string; provider: string; has_api_key: boolean }>;
      for (const slug of ['mock', 'console-extra']) {
        const provider = providers.find((entry) => entry.slug === slug);
        assert.equal(provider?.provider, 'openai');
        assert.equal(provider?.has_api_key, true);
      }
      // Each pod names itself and serves the same state hash.
      const hashes = pods.map((pod) => ({ pod: pod.name, replica: served.get(pod.name)?.['replica'], hash: served.get(pod.name)?.['state_hash'] }));
      for (const entry of hashes) assert.equal(entry.replica, entry.pod);
      assert.equal(new Set(hashes.map((entry) => entry.hash)).size, 1, JSON.stringify(hashes));
      assert.ok(pods.some((pod) => pod.name === viaService.body['replica']), 'the Service answered from one of the pods');
      // In a cluster the configuration carries the operator's view: every proxy pod with the
      // hash it serves, and the custom resource each item came from with its conditions.
      const cluster = await eventually(async () => {
        const answer = (await getJson(serviceOrigin, '/v1/configuration')).body as {
          mode?: string;
          cluster_error?: string | null;
          desired_hash?: string;
          replicas?: Array<{ pod: string | null; served_hash: string | null; matches_desired: boolean }> | null;
          providers?: Array<{ slug: string; source?: { kind: string; name: string; conditions: Array<{ type: string; status: string }> } | null }>;
        };
        const replicas = answer.replicas ?? [];
        const current = pods.every((pod) => replicas.some((replica) => replica.pod === pod.name && replica.served_hash === hashes[0]?.hash && replica.matches_desired));
        return answer.mode === 'cluster' && answer.cluster_error === null && answer.desired_hash === hashes[0]?.hash && current ? answer : undefined;
      }, "the operator's view listing both pods serving the desired hash", { timeoutMs: 60_000, intervalMs: 1_000 });
      // The same key as a bearer token (as curl and SDKs send it): reported, not asserted.
      const bearer = await request(`${serviceOrigin}/v1/configuration`, { dispatcher: direct, headers: { authorization: `Bearer ${gatewayKey}` } });
      const bearerBody = (await bearer.body.json()) as { mode?: string; cluster_error?: string | null; replicas?: unknown[] | null };
      log(`/v1/configuration with Authorization: Bearer: HTTP ${bearer.statusCode}, cluster_error ${JSON.stringify(bearerBody.cluster_error)}, ${bearerBody.replicas?.length ?? 'no'} replicas`);
      for (const slug of ['mock', 'console-extra']) {
        const source = cluster.providers?.find((entry) => entry.slug === slug)?.source;
        assert.equal(source?.kind, 'Provider', `${slug}: ${JSON.stringify(source)}`);
        assert.equal(source?.name, slug);
        assert.ok(source?.conditions.some((condition) => condition.type === 'Ready' && condition.status === 'True'), JSON.stringify(source));
      }
      log(`console through ${serviceOrigin}: /console/ 200 with CSP "${csp}"; /v1/configuration lists mock + console-extra (keys never shown) with their Provider resources and conditions; replicas ${JSON.stringify(cluster.replicas?.map((replica) => `${replica.pod}=${String(replica.served_hash).slice(0, 12)}`))}, desired ${String(cluster.desired_hash).slice(0, 12)}`);
    } finally {
      await kubectl('delete', 'provider', 'console-extra', '--ignore-not-found');
    }
  });
});
