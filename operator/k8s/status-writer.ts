import { randomBytes } from 'node:crypto';
import { conditionTransitions, nextStatus, statusChanged } from '../reconcile/conditions.ts';
import { GROUP_VERSION, RESOURCE_KINDS, type ResourceStatus } from '../reconcile/resource-schemas.ts';
import type { CustomResource, RenderedStatus } from '../reconcile/resource-types.ts';
import { isKubeApiError, type KubeClient } from './kube-client.ts';
import { FIELD_MANAGER } from './output-writer.ts';

// Writes each resource's status through the /status subresource, only when it changed,
// and records an Event for every condition transition (Warning when a condition turns
// False). What was written is remembered per resourceVersion, so a render that runs before
// the watch delivers our own update neither writes twice nor repeats an Event.

export interface StatusWriterOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  /** Who writes (the pod name): Event reportingInstance. */
  readonly identity: string;
  readonly now?: () => Date;
  /** Condition types whose owner records its own Events (budget spend): no Event per transition here. */
  readonly quietConditionTypes?: ReadonlySet<string>;
}

interface Written {
  /** resourceVersion of the object our write was based on, and the one it produced. */
  readonly before: string | undefined;
  readonly after: string | undefined;
  readonly status: ResourceStatus;
}

export class StatusWriter {
  readonly #options: StatusWriterOptions;
  readonly #written = new Map<string, Written>();

  constructor(options: StatusWriterOptions) {
    this.#options = options;
  }

  /** Writes the statuses that changed; returns how many were written. */
  async write(rendered: readonly RenderedStatus[], lookup: (status: RenderedStatus) => CustomResource | undefined): Promise<number> {
    const now = (this.#options.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const live = new Set<string>();
    let writes = 0;
    for (const status of rendered) {
      const key = `${status.kind}/${status.name}`;
      live.add(key);
      const resource = lookup(status);
      if (resource === undefined) continue;
      const current = this.#currentStatus(key, resource);
      const next = nextStatus(current, status, now);
      if (!statusChanged(current, next)) continue;
      const plural = RESOURCE_KINDS[status.kind].plural;
      let updated: CustomResource | undefined;
      try {
        updated = await this.#options.client.request<CustomResource>(
          'PATCH',
          `/apis/${GROUP_VERSION}/namespaces/${this.#options.namespace}/${plural}/${status.name}/status`,
          { body: { status: next }, contentType: 'application/merge-patch+json' },
        );
      } catch (error) {
        if (isKubeApiError(error, 404)) continue; // deleted meanwhile
        throw error;
      }
      writes += 1;
      this.#written.set(key, { before: resource.metadata.resourceVersion, after: updated.metadata.resourceVersion, status: next });
      for (const transition of conditionTransitions(current, next)) {
        if (this.#options.quietConditionTypes?.has(transition.type) === true) continue;
        await this.#event(status, resource, transition.warning ? 'Warning' : 'Normal', transition.reason, `${transition.type}=${transition.to}: ${transition.message}`);
      }
    }
    for (const key of this.#written.keys()) if (!live.has(key)) this.#written.delete(key);
    return writes;
  }

  /** The freshest status we know: our own write when the cache has not caught up with it. */
  #currentStatus(key: string, resource: CustomResource): unknown {
    const written = this.#written.get(key);
    const version = resource.metadata.resourceVersion;
    if (written !== undefined && (version === written.before || version === written.after)) return written.status;
    return resource.status;
  }

  async #event(status: RenderedStatus, resource: CustomResource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await recordEvent(this.#options, { kind: status.kind, name: status.name, resource }, type, reason, message);
  }
}

/** Records a core/v1 Event about one of our resources; best effort (a failed Event never fails the caller). */
export async function recordEvent(
  options: Pick<StatusWriterOptions, 'client' | 'namespace' | 'identity' | 'now'>,
  about: { readonly kind: string; readonly name: string; readonly resource: CustomResource },
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  const time = (options.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await options.client
    .request('POST', `/api/v1/namespaces/${options.namespace}/events`, {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${about.name}.${randomBytes(8).toString('hex')}`, namespace: options.namespace },
        involvedObject: {
          apiVersion: GROUP_VERSION,
          kind: about.kind,
          name: about.name,
          namespace: options.namespace,
          uid: about.resource.metadata.uid,
          resourceVersion: about.resource.metadata.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: FIELD_MANAGER },
        reportingComponent: FIELD_MANAGER,
        reportingInstance: options.identity,
        firstTimestamp: time,
        lastTimestamp: time,
        count: 1,
      },
    })
    .then(
      () => undefined,
      () => undefined,
    );
}
