import type { Logger } from 'pino';
import { GatewayError } from '../errors.ts';
import type { GatewayMetrics } from '../observability/gateway-metrics.ts';
import type { RateLimitCounterStore, WindowSpec } from './counter-store.ts';
import { groupKeyOf, policyApplies, type RequestFacts } from './policy-matching.ts';
import { WINDOW_MS, type RateLimitPolicy } from './policy-schema.ts';

// Enforcement (issue: rate-limit policies). Every applicable policy must admit: requests
// policies count one per request atomically; tokens policies admit on the usage already
// counted and are charged from the provider's `usage` after the answer. A store failure
// fails open by default (counted and logged) or closed (503) when configured.

export type FailMode = 'open' | 'closed';

export interface RateLimiterOptions {
  store: RateLimitCounterStore;
  metrics: GatewayMetrics;
  logger: Logger;
  failMode: FailMode;
  now: () => number;
}

export interface Admission {
  /** Token policies that apply to this request: charge them with the answer's usage. */
  readonly tokenWindows: readonly WindowSpec[];
}

const NOTHING_TO_CHARGE: Admission = { tokenWindows: [] };

export class RateLimiter {
  readonly #options: RateLimiterOptions;

  constructor(options: RateLimiterOptions) {
    this.#options = options;
  }

  /** Admits the request or throws a 429 naming the policy (with retry-after and x-ratelimit-*). */
  async admit(policies: Iterable<RateLimitPolicy>, facts: RequestFacts): Promise<Admission> {
    const applicable: RateLimitPolicy[] = [];
    for (const policy of policies) if (policyApplies(policy, facts)) applicable.push(policy);
    if (applicable.length === 0) return NOTHING_TO_CHARGE;

    const { store, now } = this.#options;
    const at = now();
    const windows = applicable.map((policy) => windowFor(policy, facts));
    const settled = await Promise.allSettled(
      applicable.map((policy, index) => {
        const window = windows[index] as WindowSpec;
        return policy.type === 'requests' ? store.consume(window, 1, at) : store.peek(window, at);
      }),
    );

    let denied: { policy: RateLimitPolicy; resetMs: number; remaining: number } | undefined;
    let storeFailed = false;
    settled.forEach((outcome, index) => {
      const policy = applicable[index] as RateLimitPolicy;
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
        this.#refund(applicable, windows, settled, at);
        throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'Rate limiting is unavailable; try again shortly.', {
          headers: { 'retry-after': '1' },
        });
      }
    }
    if (denied !== undefined) {
      this.#refund(applicable, windows, settled, at);
      throw rateLimited(denied.policy, denied.resetMs, denied.remaining);
    }
    const tokenWindows = windows.filter((_window, index) => applicable[index]?.type === 'tokens');
    return tokenWindows.length === 0 ? NOTHING_TO_CHARGE : { tokenWindows };
  }

  /** Charges token policies with an answer's usage; never delays or fails the response. */
  chargeTokens(admission: Admission, tokens: number): void {
    if (admission.tokenWindows.length === 0 || !(tokens > 0)) return;
    const at = this.#options.now();
    for (const window of admission.tokenWindows) {
      this.#options.store.add(window, tokens, at).catch((error: unknown) => {
        this.#options.logger.warn({ err: { message: (error as Error).message } }, 'could not record token usage');
      });
    }
  }

  // Requests admitted by some policies but refused by another must not count.
  #refund(policies: RateLimitPolicy[], windows: WindowSpec[], settled: PromiseSettledResult<{ allowed: boolean }>[], at: number): void {
    settled.forEach((outcome, index) => {
      if (policies[index]?.type !== 'requests' || outcome.status !== 'fulfilled' || !outcome.value.allowed) return;
      this.#options.store.add(windows[index] as WindowSpec, -1, at).catch(() => undefined);
    });
  }

  #count(policy: RateLimitPolicy, result: 'allowed' | 'denied' | 'error'): void {
    this.#options.metrics.rateLimitDecisions.inc({ policy: this.#options.metrics.policyLabel.of(policy.id), result });
  }
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
