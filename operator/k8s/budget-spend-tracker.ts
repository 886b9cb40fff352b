import type { BudgetStore } from '../../proxy/budgets/budget-store.ts';
import {
  MAX_SPEND_GROUPS,
  spendChanged,
  spendConditions,
  spendPrefixOf,
  summarizeSpend,
  unknownSpendConditions,
  usageLimitOf,
} from '../reconcile/budget-spend.ts';
import { GROUP_VERSION, RESOURCE_KINDS, type BudgetSpend } from '../reconcile/resource-schemas.ts';
import type { CustomResource, DesiredCondition } from '../reconcile/resource-types.ts';
import { isKubeApiError, type KubeClient } from './kube-client.ts';
import { recordEvent } from './status-writer.ts';
import { PollingLoop } from './polling-loop.ts';

// Each UsageLimitPolicy's spend this period, in its status (docs/decisions.md, "Budget
// spend in the custom resource"). The leader reads the same counters the proxies reserve
// and settle on — the shared budget store (Redis) — every `intervalMs` and on demand (a
// policy changed), writes `status.spend` when it changed (merge patch of that field only;
// the conditions stay with the StatusWriter, fed from `conditionsFor`), and records one
// Warning Event per policy and period when the alert threshold, or the limit, is first
// reached. A new leader learns what was announced from the resource's own status, so a
// leader change does not repeat an Event.

export const SPEND_CONDITION_TYPES: ReadonlySet<string> = new Set(['ThresholdReached', 'Exhausted']);

export interface BudgetSpendTrackerOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  /** Who writes (the pod name): Event reportingInstance. */
  readonly identity: string;
  /** The proxies' shared budget store (read only: scan); undefined without Redis. */
  readonly store: Pick<BudgetStore, 'scan'> | undefined;
  /** The UsageLimitPolicy resources (the informer cache). */
  readonly resources: () => readonly CustomResource[];
  /** Only the leader reads and writes. */
  readonly active: () => boolean;
  /** Some policy's conditions changed: reconcile to write them. */
  readonly onChange: () => void;
  /** Default 30 s. */
  readonly intervalMs?: number;
  /** Fewest ms between two reads, however often poked (default 1 s). */
  readonly minGapMs?: number;
  /** A spend unchanged this long is written again to refresh updatedAt (default 5 min). */
  readonly refreshMs?: number;
  readonly now?: () => number;
}

interface Announced {
  readonly period: string;
  readonly threshold: boolean;
  readonly exhausted: boolean;
}

interface Entry {
  readonly conditions: readonly DesiredCondition[];
  readonly spend?: BudgetSpend;
  readonly writtenAt?: number;
}

export class BudgetSpendTracker {
  readonly #options: BudgetSpendTrackerOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #announced = new Map<string, Announced>();
  readonly #loop: PollingLoop;
  #again = false;
  #lastRun = Number.NEGATIVE_INFINITY;
  /** The policies (name and generation) the last read saw. */
  #fingerprint = '';

  constructor(options: BudgetSpendTrackerOptions) {
    this.#options = options;
    this.#loop = new PollingLoop(
      () => this.refresh(),
      () => {
        const again = this.#again;
        this.#again = false;
        return again ? (options.minGapMs ?? 1_000) : (options.intervalMs ?? 30_000);
      },
      { stopped: true },
    );
  }

  start(): void {
    this.#loop.start();
  }

  stop(): void {
    this.#loop.stop();
  }

  /**
   * Reads again soon (no sooner than minGapMs after the last read) when the policies changed
   * since the last read (any other change of the cache is ignored), or always with `force`.
   */
  poke(force = false): void {
    if (!force && fingerprintOf(this.#options.resources()) === this.#fingerprint) return;
    if (this.#loop.running) {
      this.#again = true;
      return;
    }
    const gap = this.#options.minGapMs ?? 1_000;
    this.#loop.schedule(Math.max(0, this.#lastRun + gap - this.#now()));
  }

  /** The spend conditions of one policy, once its spend was read (none before). */
  conditionsFor(name: string): readonly DesiredCondition[] {
    return this.#entries.get(name)?.conditions ?? [];
  }

  /** The last spend read for one policy. */
  spendOf(name: string): BudgetSpend | undefined {
    return this.#entries.get(name)?.spend;
  }

  /** One pass over every policy (the timer calls it; tests may too). */
  async refresh(): Promise<void> {
    if (!this.#options.active()) return;
    this.#lastRun = this.#now();
    this.#fingerprint = fingerprintOf(this.#options.resources());
    const live = new Set<string>();
    let changed = false;
    for (const resource of this.#options.resources()) {
      const name = resource.metadata.name;
      const policy = usageLimitOf(resource);
      if (policy === undefined || policy.status !== 'active') continue; // not enforced: no spend conditions
      live.add(name);
      const before = this.#entries.get(name);
      const next = await this.#read(resource, policy, before);
      if (!sameConditions(before?.conditions, next.conditions)) changed = true;
      this.#entries.set(name, next);
    }
    for (const name of [...this.#entries.keys()]) {
      if (!live.has(name)) {
        this.#entries.delete(name);
        this.#announced.delete(name);
        changed = true;
      }
    }
    if (changed) this.#options.onChange();
  }

  async #read(resource: CustomResource, policy: NonNullable<ReturnType<typeof usageLimitOf>>, before: Entry | undefined): Promise<Entry> {
    const store = this.#options.store;
    if (store === undefined) {
      return { conditions: unknownSpendConditions('NoSharedStore', 'Spend is read from the shared budget store (Redis); none is configured for the operator.') };
    }
    const at = this.#now();
    const { period, prefix } = spendPrefixOf(policy, at);
    let counters;
    try {
      counters = await store.scan(prefix, MAX_SPEND_GROUPS);
    } catch {
      // Keep what was last read; Unknown only when nothing ever was.
      return before?.spend !== undefined ? before : { conditions: unknownSpendConditions('StoreUnavailable', 'The shared budget store did not answer; retrying.') };
    }
    const summary = summarizeSpend(policy, period, counters, new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z'));
    const conditions = spendConditions(policy, summary);
    let writtenAt = before?.writtenAt;
    let spend = before?.spend;
    const stale = writtenAt === undefined || at - writtenAt >= (this.#options.refreshMs ?? 300_000);
    if (spendChanged(before?.spend ?? statusSpendOf(resource), summary.spend) || stale) {
      if (await this.#writeSpend(resource, summary.spend)) {
        spend = summary.spend;
        writtenAt = at;
      }
    }
    await this.#announce(resource, policy.credit_limit, summary.spend, conditions);
    return { conditions, ...(spend === undefined ? {} : { spend }), ...(writtenAt === undefined ? {} : { writtenAt }) };
  }

  async #writeSpend(resource: CustomResource, spend: BudgetSpend): Promise<boolean> {
    const plural = RESOURCE_KINDS.UsageLimitPolicy.plural;
    try {
      await this.#options.client.request('PATCH', `/apis/${GROUP_VERSION}/namespaces/${this.#options.namespace}/${plural}/${resource.metadata.name}/status`, {
        body: { status: { spend } },
        contentType: 'application/merge-patch+json',
      });
      return true;
    } catch (error) {
      if (isKubeApiError(error, 404)) return false; // deleted meanwhile
      return false; // the next pass retries
    }
  }

  /** One Warning Event per policy and period for each of: threshold reached, limit spent. */
  async #announce(resource: CustomResource, limit: number, spend: BudgetSpend, conditions: readonly DesiredCondition[]): Promise<void> {
    const name = resource.metadata.name;
    const threshold = conditions.some((condition) => condition.type === 'ThresholdReached' && condition.status === 'True');
    const exhausted = conditions.some((condition) => condition.type === 'Exhausted' && condition.status === 'True');
    const known = this.#announced.get(name) ?? announcedInStatus(resource);
    const samePeriod = known?.period === spend.period;
    const amounts = `spent ${spend.spent} ${spend.unit} of ${limit} in period ${spend.period} (${spend.groups} group${spend.groups === 1 ? '' : 's'}; ${spend.remaining} left in the tightest)`;
    const about = { kind: 'UsageLimitPolicy', name, resource };
    const writer = { client: this.#options.client, namespace: this.#options.namespace, identity: this.#options.identity, now: () => new Date(this.#now()) };
    if (threshold && !(samePeriod && known.threshold)) {
      await recordEvent(writer, about, 'Warning', 'BudgetThresholdReached', `Alert threshold ${spend.alertThreshold} ${spend.unit} reached: ${amounts}.`);
    }
    if (exhausted && !(samePeriod && known.exhausted)) {
      await recordEvent(writer, about, 'Warning', 'BudgetExhausted', `Credit limit spent: ${amounts}; requests it cannot cover are refused with 429.`);
    }
    this.#announced.set(name, {
      period: spend.period,
      threshold: threshold || (samePeriod && known.threshold),
      exhausted: exhausted || (samePeriod && known.exhausted),
    });
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }
}

function fingerprintOf(resources: readonly CustomResource[]): string {
  return resources.map((resource) => `${resource.metadata.name}@${resource.metadata.generation ?? 0}`).join(',');
}

function statusSpendOf(resource: CustomResource): BudgetSpend | undefined {
  return (resource.status as { spend?: BudgetSpend } | undefined)?.spend;
}

/** What an earlier leader announced, as the resource's status says (its conditions carry the period's state). */
function announcedInStatus(resource: CustomResource): Announced | undefined {
  const status = resource.status as { spend?: { period?: string }; conditions?: Array<{ type?: string; status?: string }> } | undefined;
  const period = status?.spend?.period;
  if (period === undefined) return undefined;
  const isTrue = (type: string) => (status?.conditions ?? []).some((condition) => condition.type === type && condition.status === 'True');
  return { period, threshold: isTrue('ThresholdReached'), exhausted: isTrue('Exhausted') };
}

function sameConditions(a: readonly DesiredCondition[] | undefined, b: readonly DesiredCondition[]): boolean {
  if (a === undefined || a.length !== b.length) return false;
  return a.every((condition, index) => {
    const other = b[index];
    return other !== undefined && other.type === condition.type && other.status === condition.status && other.reason === condition.reason && other.message === condition.message;
  });
}
