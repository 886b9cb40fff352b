import { periodOf } from '../../proxy/budgets/budget-period.ts';
import { counterKey, fromUnits, toUnits } from '../../proxy/budgets/budget-enforcer.ts';
import type { UsageLimitPolicy } from '../../proxy/budgets/usage-limit-schema.ts';
import type { BudgetSpend } from './resource-schemas.ts';
import type { CustomResource, DesiredCondition } from './resource-types.ts';
import { UsageLimitPolicySpecSchema } from './resource-schemas.ts';

// A UsageLimitPolicy's spend this period, from its budget counters (the proxies' shared
// store): `status.spend` and the ThresholdReached / Exhausted conditions. Pure: the k8s
// layer reads the counters (budget-spend-tracker.ts) and writes the result.

/** Counters read per policy and period; more groups than this are not summed. */
export const MAX_SPEND_GROUPS = 1000;

/** Exhausted once a group has less than this share of its limit left to settle. */
export const EXHAUSTED_SHARE = 0.01;

export interface SpendCounter {
  readonly key: string;
  readonly used: number;
  readonly spent: number;
}

export interface PolicySpend {
  readonly spend: BudgetSpend;
  /** Groups at or past alert_threshold (settled spend). */
  readonly thresholdGroups: number;
  /** Groups with less than 1% of the limit left to settle. */
  readonly exhaustedGroups: number;
}

/** The policy a UsageLimitPolicy resource renders to (id: its name), or undefined when its spec is invalid. */
export function usageLimitOf(resource: CustomResource): UsageLimitPolicy | undefined {
  const parsed = UsageLimitPolicySpecSchema.safeParse(resource.spec);
  if (!parsed.success) return undefined;
  if (parsed.data.alert_threshold !== undefined && parsed.data.alert_threshold > parsed.data.credit_limit) return undefined;
  return { id: resource.metadata.name, ...parsed.data };
}

/** The counter-key prefix of the policy's current period (scan it to find every group). */
export function spendPrefixOf(policy: UsageLimitPolicy, atMs: number): { period: string; prefix: string } {
  const period = periodOf(policy, atMs);
  return { period, prefix: counterKey(policy, period, '') };
}

/** Sums the period's counters into `status.spend`. */
export function summarizeSpend(policy: UsageLimitPolicy, period: string, counters: readonly SpendCounter[], updatedAt: string): PolicySpend {
  const limit = limitUnits(policy);
  const alertAt = policy.alert_threshold === undefined ? undefined : toUnits(policy, policy.alert_threshold);
  let spent = 0;
  let maxUsed = 0;
  let thresholdGroups = 0;
  let exhaustedGroups = 0;
  for (const counter of counters) {
    spent += counter.spent;
    maxUsed = Math.max(maxUsed, counter.used);
    if (alertAt !== undefined && counter.spent >= alertAt) thresholdGroups += 1;
    if (limit - counter.spent < limit * EXHAUSTED_SHARE) exhaustedGroups += 1;
  }
  return {
    spend: {
      period,
      unit: policy.type === 'cost' ? 'usd' : 'tokens',
      limit: policy.credit_limit,
      ...(policy.alert_threshold === undefined ? {} : { alertThreshold: policy.alert_threshold }),
      spent: round(policy, fromUnits(policy, spent)),
      remaining: round(policy, fromUnits(policy, Math.max(0, limit - maxUsed))),
      groups: counters.length,
      updatedAt,
    },
    thresholdGroups,
    exhaustedGroups,
  };
}

/** ThresholdReached and Exhausted for a policy whose spend was read. */
export function spendConditions(policy: UsageLimitPolicy, spend: PolicySpend): DesiredCondition[] {
  const { period, unit } = spend.spend;
  const of = (count: number) => (spend.spend.groups <= 1 ? 'The budget' : `${count} of ${spend.spend.groups} groups`);
  const threshold: DesiredCondition =
    policy.alert_threshold === undefined
      ? { type: 'ThresholdReached', status: 'False', reason: 'NoThreshold', message: 'No alert_threshold is set.' }
      : spend.thresholdGroups > 0
        ? { type: 'ThresholdReached', status: 'True', reason: 'BudgetThresholdReached', message: `${of(spend.thresholdGroups)} reached the alert threshold (${policy.alert_threshold} ${unit}) in period ${period}.` }
        : { type: 'ThresholdReached', status: 'False', reason: 'BelowThreshold', message: `Below the alert threshold (${policy.alert_threshold} ${unit}) in period ${period}.` };
  const exhausted: DesiredCondition =
    spend.exhaustedGroups > 0
      ? { type: 'Exhausted', status: 'True', reason: 'BudgetExhausted', message: `${of(spend.exhaustedGroups)} spent the credit limit (${policy.credit_limit} ${unit}, less than 1% left) in period ${period}.` }
      : { type: 'Exhausted', status: 'False', reason: 'WithinBudget', message: `Within the credit limit (${policy.credit_limit} ${unit}) in period ${period}.` };
  return [threshold, exhausted];
}

/** Both conditions Unknown: the spend could not be read. */
export function unknownSpendConditions(reason: 'NoSharedStore' | 'StoreUnavailable', message: string): DesiredCondition[] {
  return [
    { type: 'ThresholdReached', status: 'Unknown', reason, message },
    { type: 'Exhausted', status: 'Unknown', reason, message },
  ];
}

/** Whether two spends differ in anything but the time they were read. */
export function spendChanged(before: BudgetSpend | undefined, after: BudgetSpend): boolean {
  if (before === undefined) return true;
  return (
    before.period !== after.period ||
    before.unit !== after.unit ||
    before.limit !== after.limit ||
    before.alertThreshold !== after.alertThreshold ||
    before.spent !== after.spent ||
    before.remaining !== after.remaining ||
    before.groups !== after.groups
  );
}

function limitUnits(policy: UsageLimitPolicy): number {
  return policy.type === 'cost' ? Math.floor(policy.credit_limit * 1_000_000 + 1e-6) : Math.floor(policy.credit_limit);
}

/** USD to the micro-dollar (the store's unit), without float noise; tokens are integers. */
function round(policy: UsageLimitPolicy, value: number): number {
  return policy.type === 'cost' ? Math.round(value * 1_000_000) / 1_000_000 : value;
}
