import type { OpenAIErrorBody } from '../../errors.ts';
import { normaliseProviderError } from '../provider-errors.ts';

// Google's error shape, `{"error":{"code":400,"message":"…","status":"INVALID_ARGUMENT"}}`
// (an array of one such object from streamGenerateContent without alt=sse), → the OpenAI
// shape with Google's canonical status as `code`. Anthropic-on-Vertex errors use
// Anthropic's shape, `{"type":"error","error":{"type":"…","message":"…"}}`.

const TYPES_BY_STATUS: Readonly<Record<string, string>> = {
  INVALID_ARGUMENT: 'invalid_request_error',
  FAILED_PRECONDITION: 'invalid_request_error',
  OUT_OF_RANGE: 'invalid_request_error',
  UNAUTHENTICATED: 'authentication_error',
  PERMISSION_DENIED: 'permission_error',
  NOT_FOUND: 'not_found_error',
  RESOURCE_EXHAUSTED: 'rate_limit_error',
  UNAVAILABLE: 'api_error',
  INTERNAL: 'api_error',
  DEADLINE_EXCEEDED: 'timeout_error',
};

export function normaliseVertexError(status: number, bodyText: string, provider: string): OpenAIErrorBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    return normaliseProviderError(status, bodyText, provider);
  }
  const first: unknown = Array.isArray(parsed) ? parsed[0] : parsed;
  const error = googleError(first);
  if (error === undefined) return normaliseProviderError(status, bodyText, provider);
  return vertexErrorBody(error, status, provider);
}

/** `{code, message, status}` of a Google error object, if it is one. */
export function googleError(value: unknown): { message: string; status: string | undefined } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const error = (value as Record<string, unknown>)['error'];
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as Record<string, unknown>;
  if (typeof record['message'] !== 'string') return undefined;
  // Anthropic's error type ("overloaded_error") is not a Google status: leave it to the generic path.
  if (typeof record['type'] === 'string') return undefined;
  return { message: record['message'], status: typeof record['status'] === 'string' ? record['status'] : undefined };
}

export function vertexErrorBody(error: { message: string; status: string | undefined }, httpStatus: number, provider: string): OpenAIErrorBody {
  const fallback = normaliseProviderError(httpStatus, '', provider).error.type;
  return {
    error: {
      message: error.message,
      type: (error.status !== undefined ? TYPES_BY_STATUS[error.status] : undefined) ?? fallback,
      param: null,
      code: error.status ?? null,
      provider,
    },
  };
}
