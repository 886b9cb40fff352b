import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { describeConfiguration } from '../../proxy/endpoints/configuration-routes.ts';
import type { GatewayState } from '../../proxy/config/gateway-state.ts';
import {
  MAX_REPLICAS,
  MAX_SOURCES,
  type ClusterView,
  type ConditionView,
  type ConfigurationSection,
  type ReplicaView,
  type SourceView,
} from '../../proxy/console/cluster-view.ts';
import { GatewayError } from '../../proxy/errors.ts';
import { KIND_NAMES, type KindName } from '../reconcile/resource-schemas.ts';
import type { CustomResource, RenderedStatus } from '../reconcile/resource-types.ts';

// GET /v1/configuration/cluster — what the console shows of a cluster beside the proxy's own
// configuration (proxy/console/cluster-view.ts): the hash each ready proxy replica serves
// (the Programmed tracker's answer, asked again at most every few seconds on any operator
// replica) and, for every custom resource, the configuration item it renders to and the
// conditions kubectl shows. Admin scope; an `admin` key sees the resources behind the items
// its workspace may see, only `org_admin` sees every resource (those left out included).
// Specs are never part of the answer: names, generations and conditions only.

const ADMIN = { config: { gatewayScope: 'admin' } } as const;

/** What a proxy replica serves, as the Programmed tracker last saw it. */
export interface ReplicaReading {
  readonly replicas: ReadonlyArray<{ readonly address: string; readonly pod?: string | undefined; readonly hash: string | undefined }>;
  readonly checkedAtMs: number;
}

export interface ClusterViewSourceOptions {
  readonly namespace: string;
  /** The state rendered now and its hash; undefined until the informers synced. */
  readonly rendered: () => { readonly state: GatewayState; readonly hash: string; readonly statuses: readonly RenderedStatus[] } | undefined;
  /** The cached resources of one kind (their written status included). */
  readonly resources: (kind: KindName) => readonly CustomResource[];
  /** The replicas and the hash each serves; undefined when no proxy Service is tracked. */
  readonly replicas?: (() => Promise<ReplicaReading>) | undefined;
}

/**
 * A Fastify plugin with GET /v1/configuration/cluster.
 *
 * @example app.register(clusterViewRoutes({ namespace, rendered: () => view, resources: (kind) => cache.resources(kind), replicas: () => tracker.latest() }));
 */
export function clusterViewRoutes(options: ClusterViewSourceOptions): FastifyPluginAsync {
  return async (app) => {
    app.get('/v1/configuration/cluster', ADMIN, async (request): Promise<ClusterView> => {
      const rendered = options.rendered();
      if (rendered === undefined) throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'The control plane is starting (custom resources not listed yet); retry shortly.');
      const reading = options.replicas === undefined ? undefined : await options.replicas();
      const workspace = workspaceLimit(request);
      const all = describeSources(options.namespace, options.resources, rendered.statuses);
      const visible = workspace === undefined ? all : all.filter((source) => source.item !== null && visibleItems(rendered.state, workspace).has(`${source.item.section}\u0000${source.item.id}`));
      return {
        object: 'gateway.cluster',
        namespace: options.namespace,
        desired_hash: rendered.hash,
        replicas_tracked: reading !== undefined,
        replicas: reading === undefined ? [] : describeReplicas(reading, rendered.hash),
        sources: visible.slice(0, MAX_SOURCES),
        has_more_sources: visible.length > MAX_SOURCES,
      };
    });
  };
}

/** Each replica with the hash it serves against the one the operator renders. Pure. */
export function describeReplicas(reading: ReplicaReading, desiredHash: string): ReplicaView[] {
  const checkedAt = new Date(reading.checkedAtMs).toISOString();
  return reading.replicas.slice(0, MAX_REPLICAS).map((replica) => ({
    pod: replica.pod ?? null,
    address: replica.address,
    served_hash: replica.hash ?? null,
    matches_desired: replica.hash === desiredHash,
    checked_at: checkedAt,
  }));
}

/** Which section of GET /v1/configuration each kind renders into. */
const SECTION_OF: Readonly<Record<KindName, ConfigurationSection>> = {
  GatewayConfig: 'configs',
  Provider: 'providers',
  RateLimitPolicy: 'rate_limit_policies',
  Prompt: 'prompts',
  Guardrail: 'guardrails',
  GatewayAPIKey: 'api_keys',
  Model: 'models',
  MCPServer: 'mcp_servers',
  UsageLimitPolicy: 'usage_limit_policies',
  ModelPrice: 'model_prices',
};

/** The id of the item a resource renders to: its name, except where the spec names it. */
function itemIdOf(kind: KindName, resource: CustomResource): string {
  const spec = (typeof resource.spec === 'object' && resource.spec !== null ? resource.spec : {}) as Record<string, unknown>;
  if (kind === 'Model' && typeof spec['name'] === 'string') return spec['name'];
  if (kind === 'ModelPrice') return `${typeof spec['provider'] === 'string' ? spec['provider'] : '*'}/${String(spec['model'])}`;
  return resource.metadata.name;
}

/**
 * Every resource of the namespace with the item it renders to and its conditions: those
 * written on the resource (what kubectl shows), or the renderer's until the first write.
 * Ordered by kind, then name. Pure.
 */
export function describeSources(namespace: string, resources: (kind: KindName) => readonly CustomResource[], statuses: readonly RenderedStatus[]): SourceView[] {
  const renderedBy = new Map(statuses.map((status) => [`${status.kind}/${status.name}`, status]));
  const out: SourceView[] = [];
  for (const kind of [...KIND_NAMES].sort()) {
    const list = [...resources(kind)].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
    for (const resource of list) {
      const status = renderedBy.get(`${kind}/${resource.metadata.name}`);
      const rendered = status?.rendered === true;
      const written = writtenStatus(resource.status);
      out.push({
        kind,
        namespace: resource.metadata.namespace ?? namespace,
        name: resource.metadata.name,
        generation: resource.metadata.generation ?? 0,
        observed_generation: written?.observedGeneration ?? null,
        rendered,
        item: rendered ? { section: SECTION_OF[kind], id: itemIdOf(kind, resource) } : null,
        conditions:
          written !== undefined && written.conditions.length > 0
            ? written.conditions
            : (status?.conditions ?? []).map((condition) => ({ type: condition.type, status: condition.status, reason: condition.reason, message: condition.message, last_transition_time: null })),
      });
    }
  }
  return out;
}

/** The status written on a resource, bounded, read defensively (another writer may add conditions). */
function writtenStatus(status: unknown): { observedGeneration: number | null; conditions: ConditionView[] } | undefined {
  if (typeof status !== 'object' || status === null) return undefined;
  const { observedGeneration, conditions } = status as { observedGeneration?: unknown; conditions?: unknown };
  const field = (value: unknown, max: number): string => (typeof value === 'string' ? value.slice(0, max) : '');
  return {
    observedGeneration: typeof observedGeneration === 'number' && Number.isInteger(observedGeneration) && observedGeneration >= 0 ? observedGeneration : null,
    conditions: (Array.isArray(conditions) ? conditions : []).slice(0, 16).map((condition: Record<string, unknown>) => ({
      type: field(condition['type'], 64),
      status: field(condition['status'], 16),
      reason: field(condition['reason'], 256),
      message: field(condition['message'], 2_048),
      last_transition_time: typeof condition['lastTransitionTime'] === 'string' ? condition['lastTransitionTime'].slice(0, 64) : null,
    })),
  };
}

/** The items a workspace-confined admin sees in GET /v1/configuration, as section\0id keys. */
function visibleItems(state: GatewayState, workspace: string): Set<string> {
  const description = describeConfiguration(state, workspace, []) as unknown as Record<string, unknown>;
  const keys = new Set<string>();
  const idOf: Partial<Record<ConfigurationSection, string>> = { providers: 'slug', models: 'name', mcp_servers: 'name' };
  for (const section of Object.values(SECTION_OF)) {
    const items = description[section];
    if (!Array.isArray(items)) continue;
    for (const item of items as Array<Record<string, unknown>>) {
      const id = item[idOf[section] ?? 'id'];
      if (typeof id === 'string') keys.add(`${section}\u0000${id}`);
    }
  }
  return keys;
}

function workspaceLimit(request: FastifyRequest): string | undefined {
  const key = request.gateway.apiKey;
  if (key?.scopes.has('org_admin') === true) return undefined;
  return key?.workspace ?? '';
}
