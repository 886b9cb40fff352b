import type { FastifyRequest } from 'fastify';
import { admitUnderRateLimits, lazyResolution, type PolicyRuntime } from '../endpoints/policy-admission.ts';
import type { ReachableTarget } from '../routing/reachable-targets.ts';

// Files and batches calls meet the rate-limit policies like the forwarded routes
// (docs/security.md, "Policies apply to what a request resolves to"): request policies count
// every call, matched on the provider it resolves to when it has one (objects the gateway
// keeps have none) and on the key, workspace and metadata. Creating a batch generates
// nothing by itself (its lines are counted as they run), so a token policy reserves 1 token,
// settled to 0 when the call ends.

/** Admits one call (or throws the 429); nothing to do when no limiter is wired. */
export async function admitCall(runtime: PolicyRuntime | undefined, request: FastifyRequest, provider: string | undefined): Promise<void> {
  if (runtime === undefined) return;
  const targets: ReachableTarget[] = provider === undefined ? [] : [{ provider, slug: undefined, model: undefined }];
  await admitUnderRateLimits(runtime, request.gateway, lazyResolution(() => targets, request.gateway), () => 1);
}
