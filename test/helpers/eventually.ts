// The one polling helper for tests: wait for a condition with a deadline, never a fixed sleep.

export interface EventuallyOptions {
  /** How long to keep trying; a hang guard, not a speed assertion. Default 5 s. */
  timeoutMs?: number;
  /** Pause between tries. Default 10 ms. */
  intervalMs?: number;
}

/**
 * Calls `check` until it returns a truthy value, and returns that. A falsy value (`false`,
 * `undefined`, `0`, `''`, `null`) or a throwing check counts as "not yet"; the last error is
 * named if the deadline passes.
 */
export async function eventually<T>(
  check: () => T | undefined | null | false | 0 | '' | Promise<T | undefined | null | false | 0 | ''>,
  what: string,
  options: EventuallyOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 10;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as T;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const cause = lastError === undefined ? '' : `: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
}
