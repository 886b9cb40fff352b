import type { CircuitBreakerSettings } from '../config/routing-config-schema.ts';
import { statusOf, type AttemptInterceptor } from './attempt-chain.ts';
import { countsAsBreakerFailure, type CircuitBreakers } from './circuit-breakers.ts';

// The circuit breaker around one attempt (config `cb_config`): an open circuit skips the
// attempt; an attempt that was not made, or that the client abandoned, takes its probe slot
// back; every other answer is recorded as a success or a failure.

export interface BreakerOptions {
  readonly breakers: CircuitBreakers;
  /** Stable identity of the target's circuit. */
  readonly id: string;
  /** Bounded metric label of the target. */
  readonly label: string;
  readonly settings: CircuitBreakerSettings;
  readonly signal: AbortSignal;
}

export function breakerInterceptor(options: BreakerOptions): AttemptInterceptor {
  const { breakers, id, label, settings, signal } = options;
  return (next) => async (context) => {
    if (!breakers.tryPass(id, label, settings)) return { kind: 'skipped', reason: 'circuit-open' };
    const outcome = await next(context);
    if (outcome.kind === 'skipped' || signal.aborted) {
      breakers.release(id);
      return outcome;
    }
    breakers.record(id, label, settings, countsAsBreakerFailure(statusOf(outcome), settings, outcome.kind === 'error' && outcome.networkOrTimeout));
    return outcome;
  };
}
