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
  /** An MCP tool call's server and tool (the server's own name); absent on model calls. */
  readonly mcp_server?: string | undefined;
  readonly mcp_tool?: string | undefined;
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
    case 'mcp_server':
      return facts.mcp_server;
    case 'mcp_tool':
      return facts.mcp_tool;
    default:
      return undefined;
  }
}

/** Every condition must match; `*` matches any present value. Archived policies never apply. */
export function policyApplies(policy: RateLimitPolicy, facts: RequestFacts): boolean {
  if (policy.status !== 'active') return false;
  if (policy.workspace_id !== undefined && policy.workspace_id !== facts.workspace_id) return false;
  return conditionsMatch(policy.conditions, facts);
}

/** Every condition matches the request's value for its key; `*` matches any present value. */
export function conditionsMatch(conditions: ReadonlyArray<{ readonly key: string; readonly value: string }>, facts: RequestFacts): boolean {
  return conditions.every((condition) => {
    const value = factOf(facts, condition.key);
    return value !== undefined && (condition.value === '*' || condition.value === value);
  });
}

/** The counter key of the group this request falls in (per group_by keys). */
export function groupKeyOf(policy: RateLimitPolicy, facts: RequestFacts): string {
  return policy.group_by.map((group) => `${group.key}=${factOf(facts, group.key) ?? ''}`).join('|');
}

export interface NeverMatchProblem {
  /** The field to name in a 400: `conditions[1].value`, `workspace_id`. */
  readonly param: string;
  readonly message: string;
}

/**
 * Why a policy can never apply to any request, or undefined. Such a policy is a limit
 * its author believes in and nobody enforces, so the API refuses it.
 */
export function neverMatchProblem(policy: Pick<RateLimitPolicy, 'conditions' | 'workspace_id'>): NeverMatchProblem | undefined {
  const required = new Map<string, { value: string; index: number }>();
  for (const [index, condition] of policy.conditions.entries()) {
    if (condition.value === '*') continue;
    const earlier = required.get(condition.key);
    if (earlier !== undefined && earlier.value !== condition.value) {
      return {
        param: `conditions[${index}].value`,
        message: `conditions[${earlier.index}] and conditions[${index}] both set ${condition.key} (to "${earlier.value}" and "${condition.value}"); no request can match both.`,
      };
    }
    required.set(condition.key, { value: condition.value, index });
  }
  const workspace = required.get('workspace_id');
  if (policy.workspace_id !== undefined && workspace !== undefined && workspace.value !== policy.workspace_id) {
    return {
      param: 'workspace_id',
      message: `workspace_id "${policy.workspace_id}" and conditions[${workspace.index}] (workspace_id "${workspace.value}") disagree; the policy would never apply.`,
    };
  }
  return undefined;
}

/** The workspace a policy's conditions pin it to (a `workspace_id` condition other than `*`). */
export function conditionWorkspace(policy: Pick<RateLimitPolicy, 'conditions'>): { value: string; index: number } | undefined {
  for (const [index, condition] of policy.conditions.entries()) {
    if (condition.key === 'workspace_id' && condition.value !== '*') return { value: condition.value, index };
  }
  return undefined;
}
