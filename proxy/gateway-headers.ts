import { GatewayError } from './errors.ts';
// The gateway's own header names, in one place (spec: Authentication; DESIGN.md §2).

export const HEADER = {
  apiKey: 'x-gateway-api-key',
  provider: 'x-gateway-provider',
  virtualKey: 'x-gateway-virtual-key',
  config: 'x-gateway-config',
  customHost: 'x-gateway-custom-host',
  traceId: 'x-gateway-trace-id',
  metadata: 'x-gateway-metadata',
  cacheForceRefresh: 'x-gateway-cache-force-refresh',
  cacheNamespace: 'x-gateway-cache-namespace',
  requestTimeout: 'x-gateway-request-timeout',
  forwardHeaders: 'x-gateway-forward-headers',
  // Response headers.
  lastUsedOptionIndex: 'x-gateway-last-used-option-index',
  retryAttemptCount: 'x-gateway-retry-attempt-count',
  cacheStatus: 'x-gateway-cache-status',
} as const;

/** Reads a single-valued header; a repeated header counts as its first value. */
export function headerValue(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value[0];
  return value;
}

/**
 * Reads an integer header: decimal digits only (no sign, hex, exponent or fraction), within
 * [min, max]. Undefined when absent or empty.
 *
 * @example integerHeader(headers['x-gateway-request-timeout'], 'x-gateway-request-timeout', 1, 600_000)
 */
export function integerHeader(value: string | string[] | undefined, name: string, min: number, max: number): number | undefined {
  const text = headerValue(value)?.trim();
  if (text === undefined || text === '') return undefined;
  const parsed = /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!(parsed >= min && parsed <= max)) {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', `${name} must be a whole number in decimal digits from ${min} to ${max}.`, { param: name });
  }
  return parsed;
}
