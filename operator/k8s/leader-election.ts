import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { isKubeApiError, type KubeClient } from './kube-client.ts';

// Leader election on a coordination.k8s.io/v1 Lease, the client-go way: a candidate takes
// the Lease when it is free or its holder has not renewed it for leaseDuration (measured on
// this process's clock from when the record last changed, so clock skew between nodes does
// not matter); the leader renews every retryPeriod and steps down when it could not renew
// for renewDeadline. Updates carry the resourceVersion, so two candidates never both win.
// On a clean stop the leader releases the Lease, and a follower takes over at once.

export interface LeaderElectionOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly logger: Logger;
  readonly onStartedLeading: () => void;
  readonly onStoppedLeading: () => void;
  readonly now?: () => number;
  /** Owner of a Lease this replica creates (the operator's Deployment): uninstalling removes it. */
  readonly owner?: { readonly apiVersion: string; readonly kind: string; readonly name: string; readonly uid: string } | undefined;
}

interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  readonly #options: LeaderElectionOptions;
  readonly #path: string;
  #leading = false;
  #observed: { record: string; at: number } | undefined;
  #stopped = false;
  #controller = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(options: LeaderElectionOptions) {
    this.#options = options;
    this.#path = `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases`;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  get leaseDurationMs(): number {
    return this.#options.leaseDurationMs ?? 15_000;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops campaigning; a leader releases the Lease so a follower can take over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#controller.abort();
    await this.#loop;
    if (this.#leading) {
      await this.#release().catch((error: unknown) => {
        this.#options.logger.warn({ err: { message: (error as Error).message } }, 'could not release the lease');
      });
      this.#setLeading(false);
    }
  }

  async #run(): Promise<void> {
    const retry = this.#options.retryPeriodMs ?? 2_000;
    const renewDeadline = this.#options.renewDeadlineMs ?? 10_000;
    let lastRenew = 0;
    while (!this.#stopped) {
      let acquired = false;
      try {
        acquired = await this.#tryAcquireOrRenew();
      } catch (error) {
        this.#options.logger.warn({ lease: this.#options.name, err: { message: (error as Error).message } }, 'lease update failed');
      }
      const now = this.#now();
      if (acquired) {
        lastRenew = now;
        this.#setLeading(true);
      } else if (this.#leading && now - lastRenew >= renewDeadline) {
        this.#options.logger.error({ lease: this.#options.name }, 'could not renew the lease in time; stepping down');
        this.#setLeading(false);
      } else if (this.#leading && this.#observed !== undefined && !this.#holdsRecord()) {
        this.#setLeading(false); // someone else holds it now
      }
      await sleep(retry * (this.#leading ? 1 : 1 + 0.2 * Math.random()), undefined, { signal: this.#controller.signal }).catch(() => undefined);
    }
  }

  #setLeading(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    this.#options.logger.info({ lease: this.#options.name, identity: this.#options.identity }, leading ? 'became leader' : 'stopped leading');
    if (leading) this.#options.onStartedLeading();
    else this.#options.onStoppedLeading();
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #holdsRecord(): boolean {
    return this.#observed !== undefined && (JSON.parse(this.#observed.record) as LeaseSpec).holderIdentity === this.#options.identity;
  }

  /** One round: true when this candidate holds the Lease afterwards. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = this.#now();
    const durationSeconds = Math.max(1, Math.round(this.leaseDurationMs / 1000));
    let lease: Lease | undefined;
    try {
      lease = await this.#options.client.request<Lease>('GET', `${this.#path}/${this.#options.name}`);
    } catch (error) {
      if (!isKubeApiError(error, 404)) throw error;
    }
    if (lease === undefined) {
      const created = await this.#options.client.request<Lease>('POST', this.#path, {
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: this.#options.name,
            namespace: this.#options.namespace,
            ...(this.#options.owner === undefined ? {} : { ownerReferences: [{ ...this.#options.owner }] }),
          },
          spec: { holderIdentity: this.#options.identity, leaseDurationSeconds: durationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
        },
      }).catch((error: unknown) => {
        if (isKubeApiError(error, 409)) return undefined; // another candidate created it first
        throw error;
      });
      if (created !== undefined) this.#observe(created.spec ?? {}, now);
      return created !== undefined;
    }
    const spec = lease.spec ?? {};
    this.#observe(spec, now);
    const holder = spec.holderIdentity ?? '';
    const mine = holder === this.#options.identity;
    const observedFor = now - (this.#observed?.at ?? now);
    const heldElsewhere = holder !== '' && !mine && observedFor < (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldElsewhere) return false;
    const next: LeaseSpec = {
      holderIdentity: this.#options.identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: mine ? (spec.acquireTime ?? microTime(now)) : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    };
    try {
      const updated = await this.#options.client.request<Lease>('PUT', `${this.#path}/${this.#options.name}`, {
        body: { ...lease, spec: next },
      });
      this.#observe(updated.spec ?? next, now);
      return true;
    } catch (error) {
      if (isKubeApiError(error, 409)) return false; // lost the race
      throw error;
    }
  }

  #observe(spec: LeaseSpec, now: number): void {
    const record = JSON.stringify({ holderIdentity: spec.holderIdentity ?? '', renewTime: spec.renewTime ?? '', leaseTransitions: spec.leaseTransitions ?? 0 });
    if (this.#observed?.record !== record) this.#observed = { record, at: now };
  }

  async #release(): Promise<void> {
    const lease = await this.#options.client.request<Lease>('GET', `${this.#path}/${this.#options.name}`);
    if (lease.spec?.holderIdentity !== this.#options.identity) return;
    await this.#options.client.request('PUT', `${this.#path}/${this.#options.name}`, {
      body: { ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, acquireTime: null, renewTime: null } },
    });
  }
}
