import type { OpenAIErrorBody } from '../errors.ts';

// Provider error bodies come in many shapes; clients get one. The provider's status is
// kept by the caller; here only the body is normalised, with the provider named.

const MAX_MESSAGE = 2000;

export function normaliseProviderError(status: number, bodyText: string, provider: string): OpenAIErrorBody {
  const parsed = parseJson(bodyText);
  const errorField = isRecord(parsed) ? parsed['error'] : undefined;
  if (isRecord(errorField) && typeof errorField['message'] === 'string') {
    return {
      error: {
        message: errorField['message'],
        type: typeof errorField['type'] === 'string' ? errorField['type'] : defaultType(status),
        param: typeof errorField['param'] === 'string' ? errorField['param'] : null,
        code: stringOrNull(errorField['code']),
        provider,
      },
    };
  }
  const message =
    typeof errorField === 'string'
      ? errorField
      : isRecord(parsed) && typeof parsed['message'] === 'string'
        ? parsed['message']
        : bodyText.trim() !== ''
          ? bodyText.trim().slice(0, MAX_MESSAGE)
          : `${provider} answered HTTP ${status}`;
  return { error: { message, type: defaultType(status), param: null, code: null, provider } };
}

function defaultType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

function stringOrNull(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return null;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
