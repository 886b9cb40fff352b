// The console's view of a cluster: the hash each proxy replica serves (pod names from the
// EndpointSlices, asked on any operator replica at most once per few seconds), and which
// custom resource each configuration item came from with its conditions — served by the
// operator (GET /v1/configuration/cluster) and merged by a proxy into GET /v1/configuration.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { clusterViewClient } from '../../operator/api/cluster-view-client.ts';
import { describeSources } from '../../operator/api/cluster-view-routes.ts';
import { KubePolicyStore } from '../../operator/api/kube-policy-store.ts';
import { startOperatorApi, type OperatorApi } from '../../operator/api/operator-api-server.ts';
import type { KubeClient } from '../../operator/k8s/kube-client.ts';
import { ProgrammedTracker } from '../../operator/k8s/programmed-tracker.ts';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import type { KindName } from '../../operator/reconcile/resource-schemas.ts';
import type { CustomResource, GatewayResources } from '../../operator/reconcile/resource-types.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { ClusterViewSchema } from '../../proxy/console/cluster-view.ts';
import { startGateway, type RunningGateway } from '../../proxy/start-gateway.ts';
import { ADMIN_KEY, exampleSet, resource, resources } from './resource-fixtures.ts';
import { createHash } from 'node:crypto';

const ORG_ADMIN_KEY = 'gw-org-admin-cluster-view-0123456789';

function clusterSet(): GatewayResources {
  const set = exampleSet();
  const list: CustomResource[] = [
    ...Object.values(set.resources).flat(),
    resource('Provider', 'team-b-anthropic', { provider: 'anthropic', workspaces: ['team-b'] }),
    resource('Provider', 'broken', { provider: 'openai', customHost: 'not a url' }),
    resource('Model', 'fast-model', { name: 'fast', target: '@openai-prod' }),
    resource('GatewayAPIKey', 'org', { workspace: 'ops', scopes: ['org_admin'], keyHash: `sha256:${createHash('sha256').update(ORG_ADMIN_KEY).digest('hex')}` }),
  ];
  return resources(list, [...set.secrets], set.egressAllow === undefined ? [] : [...set.egressAllow]);
}

/** The provider as kubectl would show it after the operator wrote its status. */
function withWrittenStatus(item: CustomResource): CustomResource {
  if (item.metadata.name !== 'openai-prod') return item;
  return {
    ...item,
    status: {
      observedGeneration: 1,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Rendered', message: 'Part of the rendered gateway state.', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' },
        { type: 'Programmed', status: 'True', reason: 'Programmed', message: 'Every ready proxy replica serves this generation.', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:01Z' },
      ],
    },
  };
}

describe('the Programmed tracker for the console', () => {
  test('names the pod of each replica and answers on a follower, asking at most once per max age', async () => {
    let asked = 0;
    const client = {
      async request() {
        asked += 1;
        return {
          items: [
            {
              addressType: 'IPv4',
              ports: [{ name: 'http', port: 8787 }],
              endpoints: [
                { addresses: ['10.0.0.2'], conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'proxy-b' } },
                { addresses: ['10.0.0.1'], conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'proxy-a' } },
              ],
            },
          ],
        };
      },
    } as unknown as KubeClient;
    const tracker = new ProgrammedTracker({
      client,
      namespace: 'aigw',
      serviceName: 'proxy',
      active: () => false, // a follower: its loop never asks
      onChange: () => undefined,
      fetchHash: async (address) => (address.startsWith('10.0.0.1') ? 'h-new' : 'h-old'),
    });
    const first = await tracker.latest(60_000);
    assert.deepEqual(
      first.snapshot.replicas.map((replica) => [replica.pod, replica.address, replica.hash]),
      [
        ['proxy-a', '10.0.0.1:8787', 'h-new'],
        ['proxy-b', '10.0.0.2:8787', 'h-old'],
      ],
    );
    const [second, third] = await Promise.all([tracker.latest(60_000), tracker.latest(60_000)]);
    assert.equal(asked, 1, 'answered from the last ask while it is fresh');
    assert.equal(second.checkedAtMs, first.checkedAtMs);
    assert.equal(third.checkedAtMs, first.checkedAtMs);
    await tracker.latest(0);
    assert.equal(asked, 2, 'asked again once stale');
    assert.equal(tracker.snapshot.replicas.length, 0, "a follower's asks do not move what Programmed reads");
  });
});

describe('describeSources', () => {
  test('each resource with the item it renders to and its conditions — written ones first, never its spec', () => {
    const set = clusterSet();
    const result = renderGatewayState(set);
    const byKind = (kind: KindName) => set.resources[kind].map(withWrittenStatus);
    const sources = describeSources('aigw', byKind, result.statuses);
    const provider = sources.find((source) => source.kind === 'Provider' && source.name === 'openai-prod');
    assert.deepEqual(provider?.item, { section: 'providers', id: 'openai-prod' });
    assert.equal(provider?.observed_generation, 1);
    assert.deepEqual(
      provider?.conditions.map((condition) => [condition.type, condition.status, condition.last_transition_time]),
      [
        ['Ready', 'True', '2026-01-01T00:00:00Z'],
        ['Programmed', 'True', '2026-01-01T00:00:01Z'],
      ],
    );
    // Not written yet: the renderer's conditions.
    const config = sources.find((source) => source.kind === 'GatewayConfig');
    assert.deepEqual(config?.item, { section: 'configs', id: 'support-fallback' });
    assert.deepEqual(config?.conditions.map((condition) => condition.type), ['Accepted', 'ResolvedRefs', 'Ready']);
    assert.equal(config?.observed_generation, null);
    assert.deepEqual(sources.find((source) => source.kind === 'Model')?.item, { section: 'models', id: 'fast' }, 'a Model is known by spec.name');
    const broken = sources.find((source) => source.name === 'broken');
    assert.equal(broken?.rendered, false);
    assert.equal(broken?.item, null);
    assert.equal(broken?.conditions.find((condition) => condition.type === 'Ready')?.status, 'False');
    const text = JSON.stringify(sources);
    for (const secret of ['sk-prod-0000', 'sk-backup-0000', ADMIN_KEY, 'vk-openai-prod', 'You are {{tone}}']) assert.ok(!text.includes(secret), `${secret} leaked`);
  });
});

describe('GET /v1/configuration/cluster and its merge into GET /v1/configuration', () => {
  let api: OperatorApi;
  let gateway: RunningGateway;
  let view: { result: RenderResult; hash: string };
  let replicasAsked = 0;

  before(async () => {
    const set = clusterSet();
    const result = renderGatewayState(set);
    const texts = serializeRenderedState(result);
    const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('; '));
    view = { result, hash: texts.hash };
    const state = loaded.state;
    assert.equal(state.hash, texts.hash, 'the hash a replica serves is the one rendered');
    const policyStore = new KubePolicyStore({ client: { request: async () => ({}) as never }, namespace: 'aigw', resources: () => set.resources.RateLimitPolicy });
    api = await startOperatorApi({
      currentState: () => state,
      policyStore,
      statePolicies: () => policyStore.statePolicies(),
      clusterView: {
        namespace: 'aigw',
        rendered: () => ({ state, hash: view.hash, statuses: view.result.statuses }),
        resources: (kind) => set.resources[kind].map(withWrittenStatus),
        replicas: async () => {
          replicasAsked += 1;
          return {
            replicas: [
              { address: '10.0.0.1:8787', pod: 'proxy-a', hash: view.hash },
              { address: '10.0.0.2:8787', pod: 'proxy-b', hash: 'an-older-hash' },
              { address: '10.0.0.3:8787', pod: 'proxy-c', hash: undefined },
            ],
            checkedAtMs: Date.parse('2026-01-01T00:00:05Z'),
          };
        },
      },
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
    });
    const dir = await mkdtemp(join(tmpdir(), 'aigw-cluster-view-'));
    await writeFile(join(dir, 'state.yaml'), texts.stateYaml);
    await writeFile(join(dir, 'credentials.yaml'), texts.credentialsYaml);
    gateway = await startGateway({
      sources: { statePath: join(dir, 'state.yaml'), credentialsPath: join(dir, 'credentials.yaml') },
      env: {},
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
      clusterView: clusterViewClient({ baseUrl: api.url }),
    });
  });
  after(async () => {
    await gateway?.close();
    await api?.close();
  });

  const get = async (origin: string, path: string, key: string): Promise<{ status: number; json: Record<string, unknown> }> => {
    const response = await fetch(`${origin}${path}`, { headers: { 'x-gateway-api-key': key } });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  test('the operator answers replicas against the desired hash and every resource to org_admin', async () => {
    const { status, json } = await get(api.url, '/v1/configuration/cluster', ORG_ADMIN_KEY);
    assert.equal(status, 200);
    const parsed = ClusterViewSchema.parse(json);
    assert.equal(parsed.desired_hash, view.hash);
    assert.deepEqual(
      parsed.replicas.map((replica) => [replica.pod, replica.served_hash, replica.matches_desired, replica.checked_at]),
      [
        ['proxy-a', view.hash, true, '2026-01-01T00:00:05.000Z'],
        ['proxy-b', 'an-older-hash', false, '2026-01-01T00:00:05.000Z'],
        ['proxy-c', null, false, '2026-01-01T00:00:05.000Z'],
      ],
    );
    assert.ok(parsed.sources.some((source) => source.name === 'broken' && !source.rendered), 'org_admin sees what was left out');
    assert.ok(parsed.sources.some((source) => source.name === 'team-b-anthropic'));
  });

  test("a workspace admin sees only the resources behind its workspace's items; a key without admin is refused", async () => {
    const { json } = await get(api.url, '/v1/configuration/cluster', ADMIN_KEY);
    const names = ClusterViewSchema.parse(json).sources.map((source) => `${source.kind}/${source.name}`);
    assert.ok(names.includes('Provider/openai-prod'));
    assert.ok(!names.includes('Provider/team-b-anthropic'), "another workspace's provider");
    assert.ok(!names.includes('Provider/broken'), 'a resource left out is shown to org_admin only');
    assert.ok(!names.includes('GatewayAPIKey/org'), "another workspace's key");
    assert.equal((await get(api.url, '/v1/configuration/cluster', 'not-a-key-at-all-0123')).status, 401);
  });

  test("a proxy's GET /v1/configuration carries the replicas and each item's source with its conditions, and no secret", async () => {
    const { status, json } = await get(gateway.origin, '/v1/configuration', ORG_ADMIN_KEY);
    assert.equal(status, 200);
    assert.equal(json['mode'], 'cluster');
    assert.equal(json['cluster_error'], null);
    assert.equal(json['desired_hash'], view.hash);
    assert.equal((json['replicas'] as unknown[]).length, 3);
    const providers = json['providers'] as Array<{ slug: string; source: { kind: string; name: string; generation: number; conditions: Array<{ type: string }> } | null }>;
    const prod = providers.find((provider) => provider.slug === 'openai-prod');
    assert.equal(prod?.source?.kind, 'Provider');
    assert.equal(prod?.source?.generation, 1);
    assert.deepEqual(prod?.source?.conditions.map((condition) => condition.type), ['Ready', 'Programmed']);
    const configs = json['configs'] as Array<{ id: string; source: { kind: string } | null }>;
    assert.equal(configs.find((config) => config.id === 'support-fallback')?.source?.kind, 'GatewayConfig');
    const models = json['models'] as Array<{ name: string; source: { name: string } | null }>;
    assert.equal(models.find((model) => model.name === 'fast')?.source?.name, 'fast-model');
    assert.ok((json['resources'] as Array<{ name: string }>).some((source) => source.name === 'broken'));
    const text = JSON.stringify(json);
    for (const secret of ['sk-prod-0000', 'sk-backup-0000', ADMIN_KEY, ORG_ADMIN_KEY]) assert.ok(!text.includes(secret), `${secret} leaked`);
    // The workspace admin's view through the proxy is confined the same way.
    const confined = await get(gateway.origin, '/v1/configuration', ADMIN_KEY);
    assert.ok(!(confined.json['resources'] as Array<{ name: string }>).some((source) => source.name === 'broken' || source.name === 'team-b-anthropic'));
    assert.ok(replicasAsked >= 2);
  });

  test('when the control plane is down the configuration still answers, with the reason in cluster_error', async () => {
    const fetchView = clusterViewClient({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 2_000 });
    await assert.rejects(() => fetchView({ apiKey: ORG_ADMIN_KEY, traceId: 't' }), /control plane .* unreachable/);
    const dir = await mkdtemp(join(tmpdir(), 'aigw-cluster-view-down-'));
    const texts = serializeRenderedState(view.result);
    await writeFile(join(dir, 'state.yaml'), texts.stateYaml);
    await writeFile(join(dir, 'credentials.yaml'), texts.credentialsYaml);
    const lonely = await startGateway({
      sources: { statePath: join(dir, 'state.yaml'), credentialsPath: join(dir, 'credentials.yaml') },
      env: {},
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
      clusterView: fetchView,
    });
    try {
      const { status, json } = await get(lonely.origin, '/v1/configuration', ORG_ADMIN_KEY);
      assert.equal(status, 200);
      assert.equal(json['replicas'], null);
      assert.match(String(json['cluster_error']), /unreachable/);
      assert.ok((json['providers'] as unknown[]).length > 0);
    } finally {
      await lonely.close();
    }
  });
});
