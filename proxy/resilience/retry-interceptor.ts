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
  const maxRetries = settings.attempts ?? 0;
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
      if (succeeded(outcome) || retry >= maxRetries || signal.aborted) return outcome;
      if (!retryableStatus(statusOf(outcome), settings)) return outcome;
      const wait = waitBefore(outcome, retry, options);
      if (wait === undefined) return outcome;
      await options.sleep(wait, signal);
      if (signal.aborted) return outcome;
      options.onRetry();
    }
  };
}

/** The wait before the next retry, or undefined when it would overrun the request's budget. */
function waitBefore(result: AttemptResult, retry: number, options: RetryOptions): number | undefined {
  const asked =
    options.settings.use_retry_after_headers === true && result.kind === 'response' ? retryAfterMs(result.response.headers, options.now()) : undefined;
  const wait = asked ?? backoffDelayMs(retry, options.baseDelayMs, options.random);
  if (wait > MAX_RETRY_WAIT_MS || options.now() + wait >= options.deadline) return undefined;
  return wait;
}
