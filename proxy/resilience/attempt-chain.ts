import type { AttemptResult } from '../upstream/call-target.ts';

// One upstream attempt, and the behaviours that wrap it — retry, circuit breaker, timeout —
// composed the way undici interceptors wrap `dispatch`: each is a function from the next
// step to a new step, in its own module, and knows nothing of the others.
//   composeAttempt(send, retry, breaker, timeout)  →  retry(breaker(timeout(send)))

/** What one step is given; interceptors pass on a changed copy. */
export interface AttemptContext {
  /** 0 for the first attempt, then 1, 2… (set by the retry interceptor). */
  readonly retry: number;
  /** The bound on this attempt (set by the timeout interceptor). */
  readonly timeoutMs: number | undefined;
  /** Called by the innermost step right before it dispatches (frees a replaced answer). */
  readonly beforeDispatch: () => void;
}

/** No attempt was made: the circuit is open, or the request's time is spent. */
export interface AttemptSkipped {
  readonly kind: 'skipped';
  readonly reason: 'circuit-open' | 'out-of-time';
}

export type AttemptOutcome = AttemptResult | AttemptSkipped;
export type Attempt = (context: AttemptContext) => Promise<AttemptOutcome>;
export type AttemptInterceptor = (next: Attempt) => Attempt;

export const FIRST_ATTEMPT: AttemptContext = { retry: 0, timeoutMs: undefined, beforeDispatch: () => undefined };

/** Wraps `send` in the interceptors, the first one outermost. */
export function composeAttempt(send: Attempt, ...interceptors: ReadonlyArray<AttemptInterceptor | undefined>): Attempt {
  let step = send;
  for (let index = interceptors.length - 1; index >= 0; index--) {
    const interceptor = interceptors[index];
    if (interceptor !== undefined) step = interceptor(step);
  }
  return step;
}

export function statusOf(result: AttemptResult): number {
  return result.kind === 'response' ? result.response.statusCode : result.error.status;
}

export function succeeded(result: AttemptResult): boolean {
  return result.kind === 'response' && result.response.statusCode >= 200 && result.response.statusCode < 300;
}
