import type { Logger } from 'pino';
import { GROUP_VERSION, KIND_NAMES, RESOURCE_KINDS, type KindName } from '../reconcile/resource-schemas.ts';
import type { CustomResource, GatewayResources, ObjectMeta, SecretResource } from '../reconcile/resource-types.ts';
import { CREDENTIAL_LABEL } from '../reconcile/secret-access.ts';
import { Informer } from './informer.ts';
import type { KubeClient } from './kube-client.ts';

// The informers of one namespace: the six kinds and its Secrets. Every replica runs them
// (followers serve the control-plane API from the cache and take over with a warm cache).
// Only Secrets carrying the opt-in label (aigateway.dev/credential) are listed and watched:
// the rest never enter the process. Helm release Secrets and the operator's own output
// Secret are excluded too.

export interface ResourceCacheOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly logger: Logger;
  /** The rendered Secret: excluded, its changes are ours. */
  readonly outputSecretName: string;
  readonly relistIntervalMs?: number;
  readonly onChange: () => void;
  readonly onRelist?: (informer: string, reason: string) => void;
}

export class ResourceCache {
  readonly #kinds: Record<KindName, Informer<CustomResource>>;
  readonly #secrets: Informer<SecretResource>;

  constructor(options: ResourceCacheOptions) {
    const common = {
      client: options.client,
      logger: options.logger,
      relistIntervalMs: options.relistIntervalMs,
      onChange: options.onChange,
    };
    const kinds = {} as Record<KindName, Informer<CustomResource>>;
    for (const kind of KIND_NAMES) {
      const plural = RESOURCE_KINDS[kind].plural;
      kinds[kind] = new Informer<CustomResource>({
        ...common,
        name: plural,
        path: `/apis/${GROUP_VERSION}/namespaces/${options.namespace}/${plural}`,
        transform: (object) => ({ apiVersion: object.apiVersion, kind: object.kind, metadata: slimMetadata(object.metadata), spec: object.spec, status: object.status }),
        onRelist: (reason) => options.onRelist?.(plural, reason),
        // Kinds newer than the first release: an operator upgraded before its CRDs still renders the rest.
        absentIsEmpty: kind === 'Model' || kind === 'UsageLimitPolicy' || kind === 'ModelPrice',
      });
    }
    this.#kinds = kinds;
    this.#secrets = new Informer<SecretResource>({
      ...common,
      name: 'secrets',
      path: `/api/v1/namespaces/${options.namespace}/secrets`,
      fieldSelector: `type!=helm.sh/release.v1,metadata.name!=${options.outputSecretName}`,
      // Any value: a Secret labelled for the wrong purpose is then reported precisely.
      labelSelector: CREDENTIAL_LABEL,
      transform: (object) => ({ metadata: slimMetadata(object.metadata), type: object.type, data: object.data }),
      onRelist: (reason) => options.onRelist?.('secrets', reason),
    });
  }

  start(): void {
    for (const informer of this.#all()) informer.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#all().map((informer) => informer.stop()));
  }

  /** True once every informer has listed once. */
  get synced(): boolean {
    return this.#all().every((informer) => informer.synced);
  }

  /** Informers that have not listed yet, with their last error (for logs and readiness). */
  pending(): string[] {
    const names = [...KIND_NAMES.map((kind) => [RESOURCE_KINDS[kind].plural, this.#kinds[kind]] as const), ['secrets', this.#secrets] as const];
    return names.filter(([, informer]) => !informer.synced).map(([name, informer]) => `${name}${informer.lastError ? ` (${informer.lastError})` : ''}`);
  }

  resources(kind: KindName): CustomResource[] {
    return this.#kinds[kind].list();
  }

  get(kind: KindName, name: string): CustomResource | undefined {
    return this.#kinds[kind].get(name);
  }

  /** What renderGatewayState reads; `settings` are the operator's own (egress, protected Secrets). */
  snapshot(settings: Pick<GatewayResources, 'egressAllow' | 'egressClientAllow' | 'protectedSecrets'>): GatewayResources {
    const resources = {} as Record<KindName, CustomResource[]>;
    for (const kind of KIND_NAMES) resources[kind] = this.#kinds[kind].list();
    return { resources, secrets: this.#secrets.list(), ...settings };
  }

  #all(): Array<Informer<CustomResource> | Informer<SecretResource>> {
    return [...Object.values(this.#kinds), this.#secrets];
  }
}

// managedFields and last-applied annotations can be large; the renderer needs none of them.
function slimMetadata(metadata: ObjectMeta): ObjectMeta {
  const annotations = metadata.annotations === undefined ? undefined : { ...metadata.annotations };
  if (annotations !== undefined) delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
  return {
    name: metadata.name,
    namespace: metadata.namespace,
    uid: metadata.uid,
    generation: metadata.generation,
    resourceVersion: metadata.resourceVersion,
    creationTimestamp: metadata.creationTimestamp,
    labels: metadata.labels,
    annotations,
  };
}
