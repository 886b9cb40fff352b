import type { Logger } from 'pino';
import { GatewayError } from '../errors.ts';
import type { CounterDecision, RateLimitCounterStore, Reservation, WindowSpec } from './counter-store.ts';
import { groupKeyOf, policyApplies, type RequestFacts } from './policy-matching.ts';
import { WINDOW_MS, type RateLimitPolicy } from './policy-schema.ts';

// Enforcement (issue: rate-limit policies). Every applicable policy must admit: requests
// policies count one per request atomically; tokens policies reserve the request's
// estimate atomically (what is left of the budget, up to the estimate; nothing left → 429)
// and are settled to the provider's `usage` after the answer. A store failure fails open by
// default (counted and logged) or closed (503) when configured.
//
// A request is matched against the facts of every target it may reach (routing resolves
// strategies, saved providers and override_params.model first): a policy applies when it
// applies to any of them, and each distinct counter it names is counted once.

export type FailMode = 'open' | 'closed';

/** Where decisions are counted (observability/gateway-metrics.ts's GatewayMetrics is one). */
export interface RateLimitMetrics {
  readonly rateLimitDecisions: { inc(labels: { policy: string; result: 'allowed' | 'denied' | 'error' }): void };
  /** Bounds the policy label (ids come from the API). */
  readonly policyLabel: { of(value: string): string };
}

export interface RateLimiterOptions {
  store: RateLimitCounterStore;
  metrics: RateLimitMetrics;
  logger: Logger;
  failMode: FailMode;
  now: () => number;
}

export interface Admission {
  /** Token windows this request reserved in, with what each reservation took: settle them with the answer's usage. */
  readonly tokenWindows: readonly WindowSpec[];
  readonly reserved: readonly number[];
}

const NOTHING_TO_CHARGE: Admission = { tokenWindows: [], reserved: [] };

interface Counted {
  readonly policy: RateLimitPolicy;
  readonly window: WindowSpec;
}

export class RateLimiter {
  readonly #options: RateLimiterOptions;

  constructor(options: RateLimiterOptions) {
    this.#options = options;
  }

  /**
   * Admits the request or throws a 429 naming the policy (with retry-after and x-ratelimit-*).
   * `facts` holds one entry per target the request may reach; `tokenEstimate` is what a token
   * policy reserves (prompt estimate + the most it may generate).
   */
  async admit(policies: Iterable<RateLimitPolicy>, facts: RequestFacts | readonly RequestFacts[], tokenEstimate = 1): Promise<Admission> {
    const counted = countersFor(policies, Array.isArray(facts) ? facts : [facts as RequestFacts]);
    if (counted.length === 0) return NOTHING_TO_CHARGE;

    const { store, now } = this.#options;
    const at = now();
    const estimate = Number.isFinite(tokenEstimate) && tokenEstimate >= 1 ? tokenEstimate : 1;
    const settled = await Promise.allSettled(
      counted.map(({ policy, window }) => (policy.type === 'requests' ? store.consume(window, 1, at) : store.reserve(window, estimate, at))),
    );

    let denied: { policy: RateLimitPolicy; resetMs: number; remaining: number } | undefined;
    let storeFailed = false;
    settled.forEach((outcome, index) => {
      const { policy } = counted[index] as Counted;
      if (outcome.status === 'rejected') {
        storeFailed = true;
        this.#count(policy, 'error');
        return;
      }
      if (outcome.value.allowed) {
        this.#count(policy, 'allowed');
      } else {
        this.#count(policy, 'denied');
        if (denied === undefined || outcome.value.resetMs > denied.resetMs) {
          denied = { policy, resetMs: outcome.value.resetMs, remaining: outcome.value.remaining };
        }
      }
    });

    if (storeFailed) {
      this.#options.logger.warn({ fail_mode: this.#options.failMode }, 'rate-limit store unavailable');
      if (this.#options.failMode === 'closed') {
        this.#refund(counted, settled, at);
        throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'Rate limiting is unavailable; try again shortly.', {
          headers: { 'retry-after': '1' },
        });
      }
    }
    if (denied !== undefined) {
      this.#refund(counted, settled, at);
      throw rateLimited(denied.policy, denied.resetMs, denied.remaining);
    }
    const tokenWindows: WindowSpec[] = [];
    const reserved: number[] = [];
    settled.forEach((outcome, index) => {
      const { policy, window } = counted[index] as Counted;
      if (policy.type !== 'tokens') return;
      tokenWindows.push(window);
      reserved.push(outcome.status === 'fulfilled' ? reservedOf(outcome.value) : 0);
    });
    return tokenWindows.length === 0 ? NOTHING_TO_CHARGE : { tokenWindows, reserved };
  }

  /**
   * Settles token reservations to the answer's usage (0 when it reported none: nothing was
   * counted for it); never delays or fails the response.
   */
  settleTokens(admission: Admission, tokens: number): void {
    if (admission.tokenWindows.length === 0) return;
    const used = Number.isFinite(tokens) && tokens > 0 ? tokens : 0;
    const at = this.#options.now();
    admission.tokenWindows.forEach((window, index) => {
      const delta = used - (admission.reserved[index] ?? 0);
      if (delta === 0) return;
      this.#options.store.add(window, delta, at).catch((error: unknown) => {
        this.#options.logger.warn({ err: { message: (error as Error).message } }, 'could not record token usage');
      });
    });
  }

  // Requests admitted by some policies but refused by another must not count.
  #refund(counted: readonly Counted[], settled: PromiseSettledResult<CounterDecision | Reservation>[], at: number): void {
    settled.forEach((outcome, index) => {
      const { policy, window } = counted[index] as Counted;
      if (outcome.status !== 'fulfilled' || !outcome.value.allowed) return;
      const amount = policy.type === 'requests' ? 1 : reservedOf(outcome.value);
      if (amount > 0) this.#options.store.add(window, -amount, at).catch(() => undefined);
    });
  }

  #count(policy: RateLimitPolicy, result: 'allowed' | 'denied' | 'error'): void {
    this.#options.metrics.rateLimitDecisions.inc({ policy: this.#options.metrics.policyLabel.of(policy.id), result });
  }
}

/** Each applicable policy's distinct counters over every target's facts (one per policy and group). */
function countersFor(policies: Iterable<RateLimitPolicy>, facts: readonly RequestFacts[]): Counted[] {
  const counted: Counted[] = [];
  const seen = new Set<string>();
  for (const policy of policies) {
    for (const target of facts) {
      if (!policyApplies(policy, target)) continue;
      const window = windowFor(policy, target);
      if (seen.has(window.key)) continue;
      seen.add(window.key);
      counted.push({ policy, window });
    }
  }
  return counted;
}

function reservedOf(decision: CounterDecision | Reservation): number {
  return 'reserved' in decision ? decision.reserved : 0;
}

function windowFor(policy: RateLimitPolicy, facts: RequestFacts): WindowSpec {
  return { key: `rl:${policy.id}:${groupKeyOf(policy, facts)}`, windowMs: WINDOW_MS[policy.unit], limit: policy.value };
}

function rateLimited(policy: RateLimitPolicy, resetMs: number, remaining: number): GatewayError {
  const kind = policy.type; // requests | tokens
  const per = { rpm: 'minute', rph: 'hour', rpd: 'day' }[policy.unit];
  const label = policy.name === undefined ? `"${policy.id}"` : `"${policy.name}" (${policy.id})`;
  return new GatewayError('AIGW_ERR_RATE_LIMITED', `Rate limit exceeded: policy ${label} allows ${policy.value} ${kind} per ${per}.`, {
    headers: {
      'retry-after': String(Math.max(1, Math.ceil(resetMs / 1000))),
      [`x-ratelimit-limit-${kind}`]: String(policy.value),
      [`x-ratelimit-remaining-${kind}`]: String(remaining),
      [`x-ratelimit-reset-${kind}`]: formatDuration(resetMs),
    },
  });
}

/** OpenAI's reset format: `1s`, `6m0s`, `850ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const totalSeconds = Math.ceil(ms / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
