import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { GatewayMetrics } from '../observability/gateway-metrics.ts';
import { conditionsMatch, factOf, type RequestFacts } from '../ratelimit/policy-matching.ts';
import { guardedCall } from '../upstream/guarded-call.ts';
import { periodOf, retentionSeconds } from './budget-period.ts';
import type { BudgetStore } from './budget-store.ts';
import type { UsageLimitPolicy } from './usage-limit-schema.ts';

// Enforcement of usage-limit policies (docs/budgets.md). Before a request is forwarded, its
// worst-case cost (or tokens), capped by each policy's max_reservation, is reserved on every
// counter of every matching policy in one atomic store call (all or none); a counter that
// cannot cover it refuses the request with a 429 naming the policy and what is left. When
// the request is accounted (request-finish.ts) the reservation is settled to the real cost.
// A store outage admits or refuses per policy (fail_open), logged and counted.

/** Store units per USD: micro-dollars, integers, exact in Redis. */
export const UNITS_PER_USD = 1_000_000;

export interface BudgetEnforcerOptions {
  readonly store: BudgetStore;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** The egress-guarded agent alert webhooks are sent through; no webhooks without it. */
  readonly dispatcher?: Dispatcher | undefined;
  readonly now: () => number;
}

/** The most a request may cost: USD (undefined when its model has no price) and tokens. */
export interface WorstCase {
  readonly costUsd: number | undefined;
  readonly tokens: number;
}

export interface BudgetCounter {
  readonly policy: UsageLimitPolicy;
  readonly key: string;
  readonly group: string;
  readonly period: string;
  readonly reserved: number;
}

export interface BudgetAdmission {
  /** The request's reservation token (its reservations are recorded under it). */
  readonly token: string;
  readonly counters: readonly BudgetCounter[];
}

/** What a finished request spent, for settlement. */
export interface ActualSpend {
  readonly costUsd: number | undefined;
  readonly tokens: number;
}

export const BUDGET_HEADER = {
  remaining: 'x-gateway-budget-remaining',
  policy: 'x-gateway-budget-policy',
  unit: 'x-gateway-budget-unit',
  charged: 'x-gateway-budget-charged',
} as const;

export class BudgetEnforcer {
  readonly #options: BudgetEnforcerOptions;

  constructor(options: BudgetEnforcerOptions) {
    this.#options = options;
  }

  get store(): BudgetStore {
    return this.#options.store;
  }

  /**
   * Reserves the request's worst case on every matching counter, or throws (429 budget
   * exceeded, 503 when a fail-closed policy's store is down). Returns undefined when no
   * policy applies; the headers to send otherwise.
   */
  async admit(
    policies: readonly UsageLimitPolicy[],
    facts: readonly RequestFacts[],
    worst: () => WorstCase,
  ): Promise<{ admission: BudgetAdmission; headers: Record<string, string> } | undefined> {
    const at = this.#options.now();
    const matched = countersFor(policies, facts, at);
    if (matched.length === 0) return undefined;
    const cost = worst();
    const amounts = matched.map(({ policy }) => reservationOf(policy, cost));
    const reservations = matched.map(({ policy, key }, index) => ({
      key,
      limit: limitOf(policy),
      amount: amounts[index] as number,
      ttlSeconds: retentionSeconds(policy),
    }));
    const token = randomUUID();
    let outcome;
    try {
      outcome = await this.#options.store.reserve(reservations, token);
    } catch (error) {
      // The script may have run although its answer was lost: undo by token, then decide.
      this.#options.store.cancel(reservations.map((item) => item.key), token).catch(() => undefined);
      return this.#storeDown(matched, token, error);
    }
    if (!outcome.admitted) {
      const refused = matched[outcome.index] as (typeof matched)[number];
      for (const { policy } of matched) this.#count(policy, policy === refused.policy ? 'denied' : 'allowed');
      throw budgetExceeded(refused.policy, limitOf(refused.policy) - outcome.used, amounts[outcome.index] as number, refused.period);
    }
    const counters = matched.map((item, index) => ({ ...item, reserved: amounts[index] as number }));
    for (const { policy } of matched) this.#count(policy, 'allowed');
    return { admission: { token, counters }, headers: remainingHeaders(matched.map((item) => item.policy), outcome.used) };
  }

  /** Settles each counter to the real spend; never delays or fails the response. */
  settle(admission: BudgetAdmission, actual: ActualSpend): void {
    const settlements = admission.counters.map((counter) => ({
      key: counter.key,
      actual: actualOf(counter.policy, actual),
      ttlSeconds: retentionSeconds(counter.policy),
      alertAt: counter.policy.alert_threshold === undefined ? -1 : toUnits(counter.policy, counter.policy.alert_threshold),
    }));
    this.#options.store.settle(settlements, admission.token).then(
      (outcomes) => {
        outcomes.forEach((outcome, index) => {
          const counter = admission.counters[index] as BudgetCounter;
          this.#observe(counter.policy, (settlements[index] as { actual: number }).actual, outcome.spent);
          if (outcome.crossed) this.#alert(counter, outcome.spent);
        });
      },
      (error: unknown) => {
        this.#options.metrics.budgetDecisions.inc({ policy: this.#label(admission.counters[0]?.policy.id), result: 'settle_error' });
        this.#options.logger.warn({ err: { message: (error as Error).message } }, 'could not settle a budget reservation');
      },
    );
  }

  #storeDown(matched: ReadonlyArray<Omit<BudgetCounter, 'reserved'>>, token: string, error: unknown): { admission: BudgetAdmission; headers: Record<string, string> } {
    const closed = matched.filter(({ policy }) => !policy.fail_open);
    for (const { policy } of matched) this.#count(policy, policy.fail_open ? 'error_open' : 'error_closed');
    this.#options.logger.warn(
      {
        err: { message: (error as Error).message },
        fail_open: matched.filter(({ policy }) => policy.fail_open).map(({ policy }) => policy.id),
        fail_closed: closed.map(({ policy }) => policy.id),
      },
      closed.length > 0 ? 'budget store unavailable; refusing (a policy fails closed)' : 'budget store unavailable; admitting (policies fail open)',
    );
    if (closed.length > 0) {
      throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'Budget enforcement is unavailable; try again shortly.', { headers: { 'retry-after': '1' } });
    }
    // Admitted without a reservation: the real spend is still recorded if the store is back by the end.
    return { admission: { token, counters: matched.map((item) => ({ ...item, reserved: 0 })) }, headers: {} };
  }

  #observe(policy: UsageLimitPolicy, actual: number, spent: number): void {
    if (policy.type !== 'cost') return;
    const label = { policy: this.#label(policy.id) };
    if (actual > 0) this.#options.metrics.budgetSpentUsd.inc(label, actual / UNITS_PER_USD);
    this.#options.metrics.budgetRemainingUsd.set(label, Math.max(0, policy.credit_limit - spent / UNITS_PER_USD));
  }

  #alert(counter: BudgetCounter, spent: number): void {
    const { policy } = counter;
    this.#options.metrics.budgetAlerts.inc({ policy: this.#label(policy.id) });
    const alert = {
      type: 'budget.alert_threshold_crossed',
      policy_id: policy.id,
      policy_name: policy.name,
      budget_type: policy.type,
      group: counter.group,
      period: counter.period,
      spent: fromUnits(policy, spent),
      credit_limit: policy.credit_limit,
      alert_threshold: policy.alert_threshold,
    };
    this.#options.logger.warn(alert, 'budget alert threshold crossed');
    const url = policy.alert_webhook;
    const dispatcher = this.#options.dispatcher;
    if (url === undefined || dispatcher === undefined) return;
    guardedCall({
      dispatcher,
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(alert),
      upstream: 'the budget alert webhook',
      headersTimeoutMs: 5_000,
      bodyTimeoutMs: 5_000,
    }).then(
      (answer) => answer.body.dump().catch(() => undefined),
      (error: unknown) => {
        this.#options.metrics.budgetDecisions.inc({ policy: this.#label(policy.id), result: 'alert_error' });
        this.#options.logger.warn({ policy: policy.id, err: { message: (error as Error).message } }, 'budget alert webhook failed');
      },
    );
  }

  #count(policy: UsageLimitPolicy, result: string): void {
    this.#options.metrics.budgetDecisions.inc({ policy: this.#label(policy.id), result });
  }

  #label(id: string | undefined): string {
    return this.#options.metrics.policyLabel.of(id);
  }
}

/** Does the policy apply to a request with these facts (any of its targets')? */
export function usageLimitApplies(policy: UsageLimitPolicy, facts: RequestFacts): boolean {
  if (policy.status !== 'active') return false;
  if (policy.workspace_id !== undefined && policy.workspace_id !== facts.workspace_id) return false;
  return conditionsMatch(policy.conditions, facts);
}

export function groupOf(policy: UsageLimitPolicy, facts: RequestFacts): string {
  return policy.group_by.map((group) => `${group.key}=${factOf(facts, group.key) ?? ''}`).join('|');
}

/** The counter key of one policy, period and group. */
export function counterKey(policy: UsageLimitPolicy, period: string, group: string): string {
  return `{budget}:${policy.id}:${period}:${group}`;
}

/** Each matching policy's distinct counters over every target's facts. */
function countersFor(policies: readonly UsageLimitPolicy[], facts: readonly RequestFacts[], at: number): Array<Omit<BudgetCounter, 'reserved'>> {
  const counters: Array<Omit<BudgetCounter, 'reserved'>> = [];
  const seen = new Set<string>();
  for (const policy of policies) {
    for (const target of facts) {
      if (!usageLimitApplies(policy, target)) continue;
      const period = periodOf(policy, at);
      const group = groupOf(policy, target);
      const key = counterKey(policy, period, group);
      if (seen.has(key)) continue;
      seen.add(key);
      counters.push({ policy, key, group, period });
    }
  }
  return counters;
}

export function toUnits(policy: Pick<UsageLimitPolicy, 'type'>, amount: number): number {
  return policy.type === 'cost' ? Math.ceil(amount * UNITS_PER_USD - 1e-6) : Math.ceil(amount);
}

export function fromUnits(policy: Pick<UsageLimitPolicy, 'type'>, units: number): number {
  return policy.type === 'cost' ? units / UNITS_PER_USD : units;
}

function limitOf(policy: UsageLimitPolicy): number {
  return policy.type === 'cost' ? Math.floor(policy.credit_limit * UNITS_PER_USD + 1e-6) : Math.floor(policy.credit_limit);
}

/** The worst case in the policy's unit, capped by max_reservation; an unpriced model reserves nothing under a cost policy. */
function reservationOf(policy: UsageLimitPolicy, worst: WorstCase): number {
  const raw = policy.type === 'cost' ? (worst.costUsd ?? 0) : worst.tokens;
  const capped = policy.max_reservation === undefined ? raw : Math.min(raw, policy.max_reservation);
  return Number.isFinite(capped) && capped > 0 ? toUnits(policy, capped) : 0;
}

function actualOf(policy: UsageLimitPolicy, actual: ActualSpend): number {
  const raw = policy.type === 'cost' ? (actual.costUsd ?? 0) : actual.tokens;
  return Number.isFinite(raw) && raw > 0 ? Math.min(toUnits(policy, raw), Number.MAX_SAFE_INTEGER) : 0;
}

/** The tightest policy's remaining budget (by share of its limit), after this reservation. */
function remainingHeaders(policies: readonly UsageLimitPolicy[], used: readonly number[]): Record<string, string> {
  let best = -1;
  let bestShare = Number.POSITIVE_INFINITY;
  let bestLimit = 0;
  // A plain loop and each limit once: this runs on the request path after the reservation.
  for (let index = 0; index < policies.length; index++) {
    const limit = limitOf(policies[index] as UsageLimitPolicy);
    const share = (limit - (used[index] ?? 0)) / limit;
    if (share < bestShare) {
      bestShare = share;
      best = index;
      bestLimit = limit;
    }
  }
  const policy = policies[best];
  if (policy === undefined) return {};
  const remaining = Math.max(0, bestLimit - (used[best] ?? 0));
  return {
    [BUDGET_HEADER.remaining]: formatAmount(policy, remaining),
    [BUDGET_HEADER.policy]: policy.id,
    [BUDGET_HEADER.unit]: policy.type === 'cost' ? 'usd' : 'tokens',
  };
}

export function formatAmount(policy: Pick<UsageLimitPolicy, 'type'>, units: number): string {
  return policy.type === 'cost' ? (units / UNITS_PER_USD).toFixed(6) : String(units);
}

function budgetExceeded(policy: UsageLimitPolicy, remainingUnits: number, wanted: number, period: string): GatewayError {
  const remaining = Math.max(0, remainingUnits);
  const label = policy.name === undefined ? `"${policy.id}"` : `"${policy.name}" (${policy.id})`;
  const unit = policy.type === 'cost' ? 'USD' : 'tokens';
  const left = policy.type === 'cost' ? `$${(remaining / UNITS_PER_USD).toFixed(6)}` : `${remaining} tokens`;
  const needs = policy.type === 'cost' ? `$${(wanted / UNITS_PER_USD).toFixed(6)}` : `${wanted} tokens`;
  const scope = policy.periodic_reset === 'never' ? '' : ` this period (${period}, resets ${policy.periodic_reset} in ${policy.time_zone})`;
  return new GatewayError(
    'AIGW_ERR_BUDGET_EXCEEDED',
    `Budget exceeded: usage-limit policy ${label} has ${left} of ${policy.credit_limit} ${unit} left${scope}; this request may cost up to ${needs}.`,
    {
      headers: {
        [BUDGET_HEADER.policy]: policy.id,
        [BUDGET_HEADER.remaining]: formatAmount(policy, remaining),
        [BUDGET_HEADER.unit]: policy.type === 'cost' ? 'usd' : 'tokens',
      },
    },
  );
}
