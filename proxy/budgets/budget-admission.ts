import type { FastifyReply } from 'fastify';
import { priceTableOf } from '../accounting/request-cost.ts';
import { contextWindowOf } from '../accounting/price-table.ts';
import type { RequestContext } from '../request-context.ts';
import type { RequestFacts } from '../ratelimit/policy-matching.ts';
import type { ReachableTarget } from '../routing/reachable-targets.ts';
import { BUDGET_HEADER, type BudgetEnforcer, type WorstCase } from './budget-enforcer.ts';
import type { UsageLimitPolicy } from './usage-limit-schema.ts';

// The request path's side of budgets: which policies hold (state file + API), the request's
// worst case, the reservation, the headers, and the settlement wired to the request's end.

/** What a request resolves to (endpoints/policy-admission.ts builds it): its reachable targets and their facts. */
export interface ResolvedRequest {
  readonly targets: readonly ReachableTarget[];
  readonly facts: readonly RequestFacts[];
}

export interface BudgetRuntime {
  /** Budget enforcement; undefined when none is wired. */
  readonly budgets?: BudgetEnforcer | undefined;
  /** Usage-limit policies created through the API. */
  readonly dynamicUsageLimits?: (() => readonly UsageLimitPolicy[]) | undefined;
}

/** What an output may be when the request names no cap and the model's context size is unknown. */
export const DEFAULT_WORST_OUTPUT_TOKENS = 4096;
const BYTES_PER_TOKEN = 4;
const OUTPUT_CAP_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

export interface WorstCaseInput {
  readonly body: Record<string, unknown> | undefined;
  readonly bodyBytes: number;
  /** Embeddings, token counts and reads produce no output tokens. */
  readonly generates: boolean;
}

/** The usage-limit policies of this request's snapshot and the API's. */
export function usageLimitsOf(runtime: BudgetRuntime, context: RequestContext): readonly UsageLimitPolicy[] {
  const fromState = context.state.document.usageLimitPolicies;
  const fromApi = runtime.dynamicUsageLimits?.() ?? [];
  if (fromApi.length === 0) return fromState;
  return fromState.length === 0 ? fromApi : [...fromState, ...fromApi];
}

/**
 * Budget admission, or undefined (no promise, no await) when no usage-limit policy can apply:
 * none wired, none in the request's snapshot and none created through the API. With budgets
 * off the request path reads two list lengths and calls nothing of proxy/budgets/ but the API
 * store's `snapshot()` (feature-off-cost.test.ts).
 */
export function budgetAdmission(
  runtime: BudgetRuntime,
  context: RequestContext,
  reply: FastifyReply,
  resolved: () => ResolvedRequest,
  input: () => WorstCaseInput,
): Promise<void> | undefined {
  const enforcer = runtime.budgets;
  if (enforcer === undefined) return undefined;
  const fromState = context.state.document.usageLimitPolicies;
  const fromApi = runtime.dynamicUsageLimits?.() ?? NO_POLICIES;
  if (fromState.length === 0 && fromApi.length === 0) return undefined;
  const policies = fromApi.length === 0 ? fromState : fromState.length === 0 ? fromApi : [...fromState, ...fromApi];
  return reserve(enforcer, policies, context, reply, resolved(), input);
}

const NO_POLICIES: readonly UsageLimitPolicy[] = [];

/** Reserves the worst case on every matching budget (or throws the 429/503), sends the remaining budget in headers, arms settlement. */
async function reserve(
  enforcer: BudgetEnforcer,
  policies: readonly UsageLimitPolicy[],
  context: RequestContext,
  reply: FastifyReply,
  request: ResolvedRequest,
  input: () => WorstCaseInput,
): Promise<void> {
  const admitted = await enforcer.admit(policies, request.facts, () => worstCaseOf(context, request, input()));
  if (admitted === undefined) return;
  reply.headers(admitted.headers);
  context.settleBudget = (spend) => enforcer.settle(admitted.admission, spend);
}

/**
 * The most the request may cost: the prompt estimated from the body (about 4 bytes per
 * token, an over-estimate for JSON) plus the most it may generate — max_tokens (or its
 * siblings), else what is left of the model's context window, else a default — priced at
 * each reachable target's rates (long-context tiers included: the table prices by the
 * input's size) and the highest taken.
 */
export function worstCaseOf(context: RequestContext, request: ResolvedRequest, input: WorstCaseInput): WorstCase {
  const prompt = Math.ceil(Math.max(0, input.bodyBytes) / BYTES_PER_TOKEN);
  const table = priceTableOf(context.state);
  let tokens = prompt;
  let costUsd: number | undefined;
  const targets = request.targets.length > 0 ? request.targets : [{ provider: undefined, model: context.model }];
  for (const target of targets) {
    const model = target.model ?? context.model;
    const output = input.generates ? outputCapOf(input.body, target.provider, model, prompt) : 0;
    tokens = Math.max(tokens, prompt + output);
    if (model === undefined) continue;
    const cost = table.costUsd(target.provider, model, { prompt, completion: output }, context.startedAtMs);
    if (cost !== undefined && Number.isFinite(cost)) costUsd = Math.max(costUsd ?? 0, cost);
  }
  return { costUsd, tokens };
}

function outputCapOf(body: Record<string, unknown> | undefined, provider: string | undefined, model: string | undefined, prompt: number): number {
  for (const field of OUTPUT_CAP_FIELDS) {
    const value = body?.[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return Math.min(value, 100_000_000);
  }
  const window = model === undefined ? undefined : contextWindowOf(provider, model);
  if (window !== undefined && window > prompt) return window - prompt;
  return DEFAULT_WORST_OUTPUT_TOKENS;
}

/**
 * An answer served from the gateway's cache under a budget says it was not charged (its
 * reservation is refunded at the end). Called by the cache lookup on a hit, before the answer
 * is sent; nothing runs for requests that reserved nothing.
 */
export function markCacheHitUncharged(reply: FastifyReply): void {
  reply.header(BUDGET_HEADER.charged, '0');
}
