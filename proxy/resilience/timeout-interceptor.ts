import type { AttemptInterceptor } from './attempt-chain.ts';

// The bound on one attempt: x-gateway-request-timeout (or the config's request_timeout),
// never past what is left of the request's budget. With no time left the attempt is skipped.

export interface TimeoutOptions {
  /** The per-attempt bound (ms) before the budget applies. */
  readonly perAttemptMs: number | undefined;
  /** Epoch ms when the request's budget ends (Infinity: no budget). */
  readonly deadline: number;
  readonly now: () => number;
}

export function timeoutInterceptor(options: TimeoutOptions): AttemptInterceptor {
  return (next) => async (context) => {
    const timeoutMs = attemptTimeout(options);
    if (timeoutMs !== undefined && timeoutMs <= 0) return { kind: 'skipped', reason: 'out-of-time' };
    return next({ ...context, timeoutMs });
  };
}

function attemptTimeout({ perAttemptMs, deadline, now }: TimeoutOptions): number | undefined {
  if (!Number.isFinite(deadline)) return perAttemptMs;
  const remaining = deadline - now();
  return perAttemptMs === undefined ? remaining : Math.min(perAttemptMs, remaining);
}
