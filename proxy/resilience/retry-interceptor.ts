import type { RetrySettings } from '../config/routing-config-schema.ts';
import type { AttemptResult } from '../upstream/call-target.ts';
import { statusOf, succeeded, type AttemptInterceptor } from './attempt-chain.ts';
import { backoffDelayMs, MAX_RETRY_WAIT_MS, retryableStatus, retryAfterMs } from './retry-policy.ts';

// Retries a failed attempt (config `retry`): exponential backoff with jitter, or the
// provider's retry-after when asked, never past the request's deadline. When a later attempt
// cannot be made (circuit open, time spent), the last real answer stands.

export interface RetryOptions {
  readonly settings: RetrySettings;
  readonly signal: AbortSignal;
  /** Epoch ms past which no retry starts. */
  readonly deadline: number;
  readonly now: () => number;
  readonly random: () => number;
  readonly baseDelayMs: number;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Frees an answer that a retry replaces. */
  readonly discard: (result: AttemptResult) => void;
  /** Counts a retry (metrics, the response's retry-count header). */
  readonly onRetry: () => void;
}

export function retryInterceptor(options: RetryOptions): AttemptInterceptor {
  const { settings, signal } = options;
  return (next) => async (context) => {
    let previous: AttemptResult | undefined;
    const beforeDispatch = (): void => {
      if (previous !== undefined) options.discard(previous);
      context.beforeDispatch();
    };
    for (let retry = 0; ; retry++) {
      const outcome = await next({ ...context, retry, beforeDispatch });
      if (outcome.kind === 'skipped') return previous ?? outcome;
      previous = outcome;
      const wait = nextRetryWait(outcome, retry, settings, signal, options.deadline, options.now, options.random, options.baseDelayMs);
      if (wait === undefined) return outcome;
      await options.sleep(wait, signal);
      if (signal.aborted) return outcome;
      options.onRetry();
    }
  };
}

/**
 * The wait before retrying `result` (attempt `retry`, 0 first), or undefined when it stands:
 * a success, retries used up, the client gone, a status not retried, or a wait that would
 * overrun the request's budget. Shared with the walk's one-frame retry loop (routing/leaf-call.ts).
 */
export function nextRetryWait(
  result: AttemptResult,
  retry: number,
  settings: RetrySettings,
  signal: AbortSignal,
  deadline: number,
  now: () => number,
  random: () => number,
  baseDelayMs: number,
): number | undefined {
  if (succeeded(result) || retry >= (settings.attempts ?? 0) || signal.aborted) return undefined;
  if (!retryableStatus(statusOf(result), settings)) return undefined;
  const asked = settings.use_retry_after_headers === true && result.kind === 'response' ? retryAfterMs(result.response.headers, now()) : undefined;
  const wait = asked ?? backoffDelayMs(retry, baseDelayMs, random);
  if (wait > MAX_RETRY_WAIT_MS || now() + wait >= deadline) return undefined;
  return wait;
}
