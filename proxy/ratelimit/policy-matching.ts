import type { RateLimitPolicy } from './policy-schema.ts';

// Does a policy apply to a request, and which counter does the request count in? Pure
// functions of the request's facts (DESIGN.md §1: policy matching lives in proxy/).

export interface RequestFacts {
  readonly workspace_id: string | undefined;
  /** The gateway API key's id — never the key itself. */
  readonly api_key: string | undefined;
  readonly provider: string | undefined;
  readonly model: string | undefined;
  readonly config: string | undefined;
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
}

/** The request's value for a policy key (`metadata.<k>` reads x-gateway-metadata). */
export function factOf(facts: RequestFacts, key: string): string | undefined {
  if (key.startsWith('metadata.')) {
    const value = facts.metadata?.[key.slice('metadata.'.length)];
    if (value === undefined || value === null) return undefined;
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
  switch (key) {
    case 'workspace_id':
      return facts.workspace_id;
    case 'api_key':
      return facts.api_key;
    case 'provider':
      return facts.provider;
    case 'model':
      return facts.model;
    case 'config':
      return facts.config;
    default:
      return undefined;
  }
}

/** Every condition must match; `*` matches any present value. Archived policies never apply. */
export function policyApplies(policy: RateLimitPolicy, facts: RequestFacts): boolean {
  if (policy.status !== 'active') return false;
  if (policy.workspace_id !== undefined && policy.workspace_id !== facts.workspace_id) return false;
  return policy.conditions.every((condition) => {
    const value = factOf(facts, condition.key);
    return value !== undefined && (condition.value === '*' || condition.value === value);
  });
}

/** The counter key of the group this request falls in (per group_by keys). */
export function groupKeyOf(policy: RateLimitPolicy, facts: RequestFacts): string {
  return policy.group_by.map((group) => `${group.key}=${factOf(facts, group.key) ?? ''}`).join('|');
}
