import type { RateLimitPolicy } from '../ratelimit/policy-schema.ts';
import type { RequestFacts } from '../ratelimit/policy-matching.ts';
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';
import type { RequestContext } from '../request-context.ts';
import type { ReachableTarget } from '../routing/reachable-targets.ts';

// Rate limits on every route that spends a provider's credentials (inference and the
// forwarded OpenAI routes alike), matched against what the request resolves to: one set of
// facts per target it may reach (docs/security.md, "Policies apply to what a request
// resolves to").

export interface PolicyRuntime {
  /** Rate-limit enforcement; undefined when no limiter is wired. */
  readonly rateLimiter: RateLimiter | undefined;
  /** Policies created through the API (the state file's come with the snapshot). */
  readonly dynamicPolicies: () => readonly RateLimitPolicy[];
}

/** What a token policy reserves when the request names no output cap (max_tokens…). */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 4096;
/** About 4 bytes of request JSON per prompt token (the same estimate as a stream left early). */
const BYTES_PER_TOKEN = 4;
const OUTPUT_CAP_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

/** What a request resolves to, for matching policies: its reachable targets and their facts. */
export interface ResolvedRequest {
  readonly targets: readonly ReachableTarget[];
  readonly facts: readonly RequestFacts[];
}

/** Resolves once, on first use: a request that meets no policy and no attachment never pays for it. */
export function lazyResolution(resolve: () => readonly ReachableTarget[], context: RequestContext): () => ResolvedRequest {
  let resolved: ResolvedRequest | undefined;
  return () => {
    if (resolved === undefined) {
      const targets = resolve();
      resolved = { targets, facts: factsOf(context, targets) };
    }
    return resolved;
  };
}

/** The request's facts once per target it may reach (at least once: key and workspace facts hold without a target). */
export function factsOf(context: RequestContext, targets: readonly ReachableTarget[]): RequestFacts[] {
  const base = {
    workspace_id: context.apiKey?.workspace,
    api_key: context.apiKey?.id,
    config: context.configId,
    metadata: context.metadata,
  };
  if (targets.length === 0) return [{ ...base, provider: undefined, model: context.model }];
  return targets.map((target) => ({ ...base, provider: target.provider, model: target.model }));
}

/**
 * The tokens a request may spend, reserved by token policies before it is sent: the prompt
 * estimated from the body's size plus the most it asks to generate (a default when it does
 * not say). Hostile values fall back to the default; the store clips a reservation to what
 * is left of the budget.
 */
export function tokenEstimate(body: Record<string, unknown> | undefined, bodyBytes: number, generates = true): number {
  const prompt = Math.ceil(Math.max(0, bodyBytes) / BYTES_PER_TOKEN);
  if (!generates) return Math.max(1, prompt);
  let output = DEFAULT_RESERVED_OUTPUT_TOKENS;
  for (const field of OUTPUT_CAP_FIELDS) {
    const value = body?.[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
      output = value;
      break;
    }
  }
  return Math.max(1, prompt + output);
}

/** Rate limits: admits the call (or throws a 429) and wires the settlement of its token reservations. */
export async function admitUnderRateLimits(runtime: PolicyRuntime, context: RequestContext, resolved: () => ResolvedRequest, estimate: () => number): Promise<void> {
  await rateLimitAdmission(runtime, context, resolved, estimate);
}

/** admitUnderRateLimits, or undefined (no promise, no await) when no rate-limit policy exists. */
export function rateLimitAdmission(runtime: PolicyRuntime, context: RequestContext, resolved: () => ResolvedRequest, estimate: () => number): Promise<void> | undefined {
  const limiter = runtime.rateLimiter;
  if (limiter === undefined) return undefined;
  const fromState = context.state.document.rateLimitPolicies;
  const fromApi = runtime.dynamicPolicies();
  if (fromState.length === 0 && fromApi.length === 0) return undefined;
  return admitRate(limiter, fromApi.length === 0 ? fromState : [...fromState, ...fromApi], context, resolved, estimate);
}

async function admitRate(
  limiter: NonNullable<PolicyRuntime['rateLimiter']>,
  policies: Parameters<NonNullable<PolicyRuntime['rateLimiter']>['admit']>[0],
  context: RequestContext,
  resolved: () => ResolvedRequest,
  estimate: () => number,
): Promise<void> {
  const admission = await limiter.admit(policies, resolved().facts, estimate());
  if (admission.tokenWindows.length === 0) return;
  // Settled once when the request is accounted (request-finish.ts): the provider's usage,
  // an estimate for a stream the client left before usage arrived, or 0 (a refund).
  context.chargeTokens = (tokens) => limiter.settleTokens(admission, tokens);
}
