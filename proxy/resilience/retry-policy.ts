import type { RetrySettings } from '../config/routing-config-schema.ts';

// Pure retry decisions (DESIGN.md §2): which statuses retry, how long to wait. The
// executor owns the loop and the clock.

export const DEFAULT_RETRY_STATUS_CODES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);
/** No single wait is longer than this, whatever a provider's retry-after says. */
export const MAX_RETRY_WAIT_MS = 60_000;
const MAX_BACKOFF_MS = 10_000;

export function retryableStatus(status: number, settings: RetrySettings): boolean {
  if (settings.on_status_codes !== undefined) return settings.on_status_codes.includes(status);
  return DEFAULT_RETRY_STATUS_CODES.has(status);
}

/** Exponential backoff with full jitter: a random wait in [0, base·2^retry], capped. */
export function backoffDelayMs(retryIndex: number, baseMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** retryIndex);
  return Math.floor(random() * ceiling);
}

/**
 * The wait a provider asked for: `retry-after-ms` (milliseconds) first, then `retry-after`
 * (seconds, or an HTTP date). Undefined when neither is present or parsable.
 */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>, now: number): number | undefined {
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined) {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = first(headers['retry-after']);
  if (after === undefined) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(after)) return Number(after) * 1000;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
