import { z } from 'zod';

// The cluster's part of GET /v1/configuration (docs/console.md): which hash each proxy replica
// serves, and which custom resource each configuration item came from with its conditions.
// The operator answers it (operator/api/cluster-view-routes.ts, GET /v1/configuration/cluster);
// a proxy in a cluster asks it with the caller's key and merges it into its own description.
// Standalone there is one replica — this process — and no custom resource.
//
// The schema bounds what a proxy accepts from the operator: it is read, never trusted blindly.

/** The configuration sections an item can belong to, as GET /v1/configuration names them. */
export const CONFIGURATION_SECTIONS = [
  'providers',
  'configs',
  'models',
  'guardrails',
  'prompts',
  'rate_limit_policies',
  'api_keys',
  'mcp_servers',
  'usage_limit_policies',
  'model_prices',
] as const;
export type ConfigurationSection = (typeof CONFIGURATION_SECTIONS)[number];

const text = (max: number) => z.string().max(max);

export const ConditionViewSchema = z.object({
  type: text(64),
  status: text(16),
  reason: text(256),
  message: text(2_048),
  last_transition_time: text(64).nullable(),
});

export const SourceViewSchema = z.object({
  kind: text(64),
  namespace: text(253),
  name: text(253),
  generation: z.number().int().nonnegative(),
  /** The generation the conditions were written for; null before the first status write. */
  observed_generation: z.number().int().nonnegative().nullable(),
  /** Whether the resource is part of the state the operator renders. */
  rendered: z.boolean(),
  /** The configuration item it renders to; null when it renders to none. */
  item: z.object({ section: z.enum(CONFIGURATION_SECTIONS), id: text(512) }).nullable(),
  conditions: z.array(ConditionViewSchema).max(16),
});

export const ReplicaViewSchema = z.object({
  pod: text(253).nullable(),
  address: text(128).nullable(),
  /** The state hash the replica answered on GET /ready; null when it did not answer. */
  served_hash: text(128).nullable(),
  matches_desired: z.boolean(),
  checked_at: text(64),
});

/** Most sources one answer carries (a namespace with more lists the first, by kind and name). */
export const MAX_SOURCES = 2_000;
export const MAX_REPLICAS = 1_000;

export const ClusterViewSchema = z.object({
  object: z.literal('gateway.cluster'),
  namespace: text(253),
  /** The hash of the state the operator renders now: what every replica should serve. */
  desired_hash: text(128).nullable(),
  /** False when the operator was not told the proxy Service (no replica can be asked). */
  replicas_tracked: z.boolean(),
  replicas: z.array(ReplicaViewSchema).max(MAX_REPLICAS),
  sources: z.array(SourceViewSchema).max(MAX_SOURCES),
  has_more_sources: z.boolean(),
});

export type ConditionView = z.infer<typeof ConditionViewSchema>;
export type SourceView = z.infer<typeof SourceViewSchema>;
export type ReplicaView = z.infer<typeof ReplicaViewSchema>;
export type ClusterView = z.infer<typeof ClusterViewSchema>;

/** Asks the control plane for its view with the caller's key; rejects when it cannot. */
export type ClusterViewFetch = (caller: { readonly apiKey: string; readonly traceId: string }) => Promise<ClusterView>;

/** The key under which an item's source is found. */
function itemKey(section: string, id: string): string {
  return `${section}\u0000${id}`;
}

/** The id an item of a section is known by in GET /v1/configuration. */
const ITEM_ID: Readonly<Record<string, (item: Record<string, unknown>) => unknown>> = {
  providers: (item) => item['slug'],
  models: (item) => item['name'],
  mcp_servers: (item) => item['name'],
};

/**
 * The description with the cluster's part: `replicas`, `desired_hash`, and a `source` on every
 * item a custom resource rendered (null on the others), plus the sources the caller may see.
 * Pure.
 */
export function withClusterView<D extends Record<string, unknown>>(description: D, cluster: { view: ClusterView } | { error: string }) {
  if ('error' in cluster) {
    return { ...description, mode: 'cluster' as const, desired_hash: null, replicas: null, resources: null, cluster_error: cluster.error };
  }
  const { view } = cluster;
  const sources = new Map<string, SourceView>();
  for (const source of view.sources) if (source.item !== null) sources.set(itemKey(source.item.section, source.item.id), source);
  const annotated: Record<string, unknown> = { ...description };
  for (const section of CONFIGURATION_SECTIONS) {
    const items = description[section];
    if (!Array.isArray(items)) continue;
    annotated[section] = items.map((item: Record<string, unknown>) => {
      const id = (ITEM_ID[section] ?? ((entry) => entry['id']))(item);
      return { ...item, source: typeof id === 'string' ? (sources.get(itemKey(section, id)) ?? null) : null };
    });
  }
  return {
    ...annotated,
    mode: 'cluster' as const,
    namespace: view.namespace,
    desired_hash: view.desired_hash,
    replicas_tracked: view.replicas_tracked,
    replicas: view.replicas,
    resources: view.sources,
    has_more_resources: view.has_more_sources,
    cluster_error: null,
  };
}

/** Standalone: one replica, this process, serving what it loaded. */
export function standaloneReplicas(pod: string, hash: string, nowMs: number): ReplicaView[] {
  return [{ pod, address: null, served_hash: hash, matches_desired: true, checked_at: new Date(nowMs).toISOString() }];
}
