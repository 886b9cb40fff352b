import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { BudgetEnforcer } from './budgets/budget-enforcer.ts';
import type { UsageLimitStore } from './budgets/usage-limit-store.ts';
import type { GatewayState } from './config/gateway-state.ts';
import type { GatewayMetrics } from './observability/gateway-metrics.ts';
import type { PolicyStore } from './ratelimit/policy-store.ts';
import type { RateLimitPolicy } from './ratelimit/policy-schema.ts';
import type { RateLimiter } from './ratelimit/rate-limiter.ts';

// What route plugins (batches, files, logs…) and the control plane see of a running
// gateway. Here, on the HTTP floor, so plugins need not import the composition root
// (start-gateway.ts) that builds it.

/** What the control plane sees of a running standalone gateway. */
export interface ControlPlaneHost {
  currentState(): GatewayState;
  readonly policyStore: PolicyStore;
  /** API-created usage-limit policies and the budget counters (absent: no usage-limit routes). */
  readonly usageLimitStore?: UsageLimitStore;
  readonly budgets?: BudgetEnforcer;
}

/** What a route plugin sees of a running gateway. */
export interface GatewayHost extends ControlPlaneHost {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  /** The upstream agent (keep-alive pools per origin). */
  readonly dispatcher: Dispatcher;
  /** Rate-limit enforcement, for routes that count calls (files, batches). */
  readonly rateLimiter: RateLimiter;
  /** Policies created through the API (the state file's come with the snapshot). */
  readonly dynamicPolicies: () => readonly RateLimitPolicy[];
  /**
   * Runs a request through this gateway's own pipeline in-process (auth, routing, retries,
   * rate limits…), e.g. for gateway-managed batches. Available once the server is built.
   */
  inject(request: InjectRequest): Promise<InjectResponse>;
}

export interface InjectRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface InjectResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}
