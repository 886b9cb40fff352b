import { randomUUID } from 'node:crypto';
import { RateLimitPolicySchema, type RateLimitPolicy } from '../../proxy/ratelimit/policy-schema.ts';
import type { NewPolicy, PolicyStore } from '../../proxy/ratelimit/policy-store.ts';
import { LAST_UPDATED_ANNOTATION } from '../reconcile/render-gateway-state.ts';
import { GROUP_VERSION, RateLimitPolicySpecSchema } from '../reconcile/resource-schemas.ts';
import type { CustomResource } from '../reconcile/resource-types.ts';

// The control-plane policy store in a cluster: a POSTed policy becomes a RateLimitPolicy
// resource (named by its id, labelled as created through the API), GET lists resources.
// Policies applied with kubectl are served as the "state" policies: listed, enforced, but
// read-only through the API (GitOps owns them), exactly like the state file's standalone.

export const SOURCE_LABEL = 'aigateway.dev/source';
export const SOURCE_API = 'api';

/** The API's minimal view of the Kubernetes client. */
export interface ResourceWriter {
  request<T = unknown>(method: string, path: string, options?: { body?: unknown; contentType?: string }): Promise<T>;
}

export interface KubePolicyStoreOptions {
  readonly client: ResourceWriter;
  readonly namespace: string;
  /** The informer's current RateLimitPolicy resources. */
  readonly resources: () => readonly CustomResource[];
}

/** The policy a RateLimitPolicy resource stands for, or undefined when its spec is invalid. */
export function policyFromResource(resource: CustomResource): RateLimitPolicy | undefined {
  const spec = RateLimitPolicySpecSchema.safeParse(resource.spec);
  if (!spec.success) return undefined;
  const created = resource.metadata.creationTimestamp;
  const updated = resource.metadata.annotations?.[LAST_UPDATED_ANNOTATION] ?? created;
  const policy = RateLimitPolicySchema.safeParse({
    id: resource.metadata.name,
    ...spec.data,
    ...(created === undefined ? {} : { created_at: created }),
    ...(updated === undefined ? {} : { last_updated_at: updated }),
  });
  return policy.success ? policy.data : undefined;
}

export function createdThroughApi(resource: CustomResource): boolean {
  return resource.metadata.labels?.[SOURCE_LABEL] === SOURCE_API;
}

export class KubePolicyStore implements PolicyStore {
  readonly #options: KubePolicyStoreOptions;
  readonly #path: string;

  constructor(options: KubePolicyStoreOptions) {
    this.#options = options;
    this.#path = `/apis/${GROUP_VERSION}/namespaces/${options.namespace}/ratelimitpolicies`;
  }

  /** Policies applied with kubectl (read-only through the API). */
  statePolicies(): RateLimitPolicy[] {
    return this.#policies((resource) => !createdThroughApi(resource));
  }

  async list(): Promise<readonly RateLimitPolicy[]> {
    return this.snapshot();
  }

  snapshot(): readonly RateLimitPolicy[] {
    return this.#policies(createdThroughApi);
  }

  async create(policy: NewPolicy): Promise<RateLimitPolicy> {
    const id = randomUUID();
    const spec = RateLimitPolicySpecSchema.parse({ ...policy, status: 'active' });
    const created = await this.#options.client.request<CustomResource>('POST', this.#path, {
      body: {
        apiVersion: GROUP_VERSION,
        kind: 'RateLimitPolicy',
        metadata: { name: id, namespace: this.#options.namespace, labels: { [SOURCE_LABEL]: SOURCE_API } },
        spec,
      },
    });
    const result = policyFromResource(created);
    if (result === undefined) throw new Error(`the API server returned an invalid RateLimitPolicy ${id}`);
    return result;
  }

  async update(id: string, patch: Partial<Pick<RateLimitPolicy, 'status' | 'value' | 'name'>>): Promise<RateLimitPolicy | undefined> {
    const existing = this.#options.resources().find((resource) => resource.metadata.name === id && createdThroughApi(resource));
    if (existing === undefined) return undefined;
    const updated = await this.#options.client.request<CustomResource>('PATCH', `${this.#path}/${id}`, {
      body: { metadata: { annotations: { [LAST_UPDATED_ANNOTATION]: new Date().toISOString() } }, spec: patch },
      contentType: 'application/merge-patch+json',
    });
    return policyFromResource(updated);
  }

  #policies(filter: (resource: CustomResource) => boolean): RateLimitPolicy[] {
    const policies: RateLimitPolicy[] = [];
    for (const resource of this.#options.resources()) {
      if (!filter(resource)) continue;
      const policy = policyFromResource(resource);
      if (policy !== undefined) policies.push(policy);
    }
    return policies.sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id));
  }
}
