import { randomUUID } from 'node:crypto';
import { UsageLimitPolicySchema, type UsageLimitPolicy } from '../../proxy/budgets/usage-limit-schema.ts';
import type { NewUsageLimit, UsageLimitPatch, UsageLimitStore } from '../../proxy/budgets/usage-limit-store.ts';
import { LAST_UPDATED_ANNOTATION } from '../reconcile/render-gateway-state.ts';
import { GROUP_VERSION, UsageLimitPolicySpecSchema } from '../reconcile/resource-schemas.ts';
import type { CustomResource } from '../reconcile/resource-types.ts';
import { createdThroughApi, SOURCE_API, SOURCE_LABEL, type ResourceWriter } from './kube-policy-store.ts';

// The usage-limit store in a cluster, like KubePolicyStore for rate limits: a POSTed policy
// becomes a UsageLimitPolicy resource (named by its id, labelled as created through the
// API); resources applied with kubectl are listed and enforced but read-only here.

export interface KubeUsageLimitStoreOptions {
  readonly client: ResourceWriter;
  readonly namespace: string;
  /** The informer's current UsageLimitPolicy resources. */
  readonly resources: () => readonly CustomResource[];
}

/** The policy a UsageLimitPolicy resource stands for, or undefined when its spec is invalid. */
export function usageLimitFromResource(resource: CustomResource): UsageLimitPolicy | undefined {
  const spec = UsageLimitPolicySpecSchema.safeParse(resource.spec);
  if (!spec.success) return undefined;
  const created = resource.metadata.creationTimestamp;
  const updated = resource.metadata.annotations?.[LAST_UPDATED_ANNOTATION] ?? created;
  const policy = UsageLimitPolicySchema.safeParse({
    id: resource.metadata.name,
    ...spec.data,
    ...(created === undefined ? {} : { created_at: created }),
    ...(updated === undefined ? {} : { last_updated_at: updated }),
  });
  return policy.success ? policy.data : undefined;
}

export class KubeUsageLimitStore implements UsageLimitStore {
  readonly #options: KubeUsageLimitStoreOptions;
  readonly #path: string;

  constructor(options: KubeUsageLimitStoreOptions) {
    this.#options = options;
    this.#path = `/apis/${GROUP_VERSION}/namespaces/${options.namespace}/usagelimitpolicies`;
  }

  /** Policies applied with kubectl (read-only through the API). */
  statePolicies(): UsageLimitPolicy[] {
    return this.#policies((resource) => !createdThroughApi(resource));
  }

  async list(): Promise<readonly UsageLimitPolicy[]> {
    return this.snapshot();
  }

  snapshot(): readonly UsageLimitPolicy[] {
    return this.#policies(createdThroughApi);
  }

  async create(policy: NewUsageLimit): Promise<UsageLimitPolicy> {
    const id = randomUUID();
    const spec = UsageLimitPolicySpecSchema.parse({ ...policy, status: 'active' });
    const created = await this.#options.client.request<CustomResource>('POST', this.#path, {
      body: {
        apiVersion: GROUP_VERSION,
        kind: 'UsageLimitPolicy',
        metadata: { name: id, namespace: this.#options.namespace, labels: { [SOURCE_LABEL]: SOURCE_API } },
        spec,
      },
    });
    const result = usageLimitFromResource(created);
    if (result === undefined) throw new Error(`the API server returned an invalid UsageLimitPolicy ${id}`);
    return result;
  }

  async update(id: string, patch: UsageLimitPatch): Promise<UsageLimitPolicy | undefined> {
    const existing = this.#options.resources().find((resource) => resource.metadata.name === id && createdThroughApi(resource));
    if (existing === undefined) return undefined;
    const updated = await this.#options.client.request<CustomResource>('PATCH', `${this.#path}/${id}`, {
      body: { metadata: { annotations: { [LAST_UPDATED_ANNOTATION]: new Date().toISOString() } }, spec: patch },
      contentType: 'application/merge-patch+json',
    });
    return usageLimitFromResource(updated);
  }

  #policies(filter: (resource: CustomResource) => boolean): UsageLimitPolicy[] {
    const policies: UsageLimitPolicy[] = [];
    for (const resource of this.#options.resources()) {
      if (!filter(resource)) continue;
      const policy = usageLimitFromResource(resource);
      if (policy !== undefined) policies.push(policy);
    }
    return policies.sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id));
  }
}
