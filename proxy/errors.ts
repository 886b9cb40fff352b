// The proxy's error codes, created in one place (like fastify's FST_ERR_*).
// Every failure the gateway itself produces is a GatewayError; the HTTP edge turns
// it into the OpenAI error shape once (see toErrorBody).

export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'timeout_error'
  | 'rate_limit_error'
  | 'budget_exceeded'
  | 'api_error'
  | 'server_error';

interface ErrorCodeSpec {
  readonly status: number;
  readonly type: OpenAIErrorType;
}

/** Stable error codes; the HTTP status and OpenAI `type` travel with each code. */
export const ERROR_CODES = {
  AIGW_ERR_INVALID_BODY: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_INVALID_JSON: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_INVALID_HEADER: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_INVALID_CONFIG: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_MALFORMED_REQUEST: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_INVALID_PATH: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_DUPLICATE_KEY: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_CREDENTIAL_HOST_CONFLICT: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_MISSING_PROVIDER: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_UNSUPPORTED_PROVIDER: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_UNSUPPORTED_ENDPOINT: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_MISSING_PROVIDER_KEY: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_EGRESS_DENIED: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_MISSING_API_KEY: { status: 401, type: 'authentication_error' },
  AIGW_ERR_AMBIGUOUS_CREDENTIAL: { status: 400, type: 'invalid_request_error' },
  AIGW_ERR_INVALID_API_KEY: { status: 401, type: 'authentication_error' },
  AIGW_ERR_FORBIDDEN: { status: 403, type: 'permission_error' },
  AIGW_ERR_READ_ONLY: { status: 409, type: 'invalid_request_error' },
  AIGW_ERR_NOT_FOUND: { status: 404, type: 'not_found_error' },
  AIGW_ERR_UNKNOWN_CONFIG: { status: 404, type: 'not_found_error' },
  AIGW_ERR_UNKNOWN_PROVIDER: { status: 404, type: 'not_found_error' },
  AIGW_ERR_UNKNOWN_MODEL: { status: 404, type: 'not_found_error' },
  AIGW_ERR_MODEL_NOT_ALLOWED: { status: 403, type: 'permission_error' },
  AIGW_ERR_METHOD_NOT_ALLOWED: { status: 405, type: 'invalid_request_error' },
  AIGW_ERR_REQUEST_TIMEOUT: { status: 408, type: 'timeout_error' },
  AIGW_ERR_BODY_TOO_LARGE: { status: 413, type: 'invalid_request_error' },
  AIGW_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, type: 'invalid_request_error' },
  AIGW_ERR_HEADERS_TOO_LARGE: { status: 431, type: 'invalid_request_error' },
  AIGW_ERR_RATE_LIMITED: { status: 429, type: 'rate_limit_error' },
  AIGW_ERR_KEY_IN_FLIGHT_LIMIT: { status: 429, type: 'rate_limit_error' },
  AIGW_ERR_BUDGET_EXCEEDED: { status: 429, type: 'budget_exceeded' },
  AIGW_ERR_INTERNAL: { status: 500, type: 'server_error' },
  AIGW_ERR_UPSTREAM_UNREACHABLE: { status: 502, type: 'api_error' },
  AIGW_ERR_UPSTREAM_INVALID_RESPONSE: { status: 502, type: 'api_error' },
  AIGW_ERR_TARGETS_UNAVAILABLE: { status: 503, type: 'api_error' },
  AIGW_ERR_STORE_UNAVAILABLE: { status: 503, type: 'api_error' },
  AIGW_ERR_OVERLOADED: { status: 503, type: 'api_error' },
  AIGW_ERR_UPSTREAM_TIMEOUT: { status: 504, type: 'timeout_error' },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface GatewayErrorOptions {
  /** The request field or header at fault, reported as OpenAI's `param`. */
  param?: string | null;
  /** Overrides the code's default status (used for provider errors that keep their status). */
  status?: number;
  /** Response headers that belong to this answer (e.g. retry-after). */
  headers?: Readonly<Record<string, string>>;
  cause?: unknown;
}

/** An error the gateway answers with; its code is stable across versions. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: OpenAIErrorType;
  readonly param: string | null;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.param = options.param ?? null;
    this.headers = options.headers;
  }
}

export interface OpenAIErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
    [extra: string]: unknown;
  };
}

/** The OpenAI-shaped body for a gateway error. */
export function toErrorBody(error: GatewayError): OpenAIErrorBody {
  return { error: { message: error.message, type: error.type, param: error.param, code: error.code } };
}

export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError;
}

// Internal errors: thrown inside the gateway and turned into a GatewayError (or a check's
// result) where they are caught; never sent as they are.

/** Why a user pattern was refused; `path` names where it was written. */
export class UserRegexError extends Error {
  readonly path: ReadonlyArray<string | number>;
  readonly reason: string;
  constructor(path: ReadonlyArray<string | number>, reason: string) {
    super(`${path.join('.')} ${reason}`);
    this.name = 'UserRegexError';
    this.path = path;
    this.reason = reason;
  }
}

/** Thrown (and reported as the check's error) when a text is longer than the cap. */
export class RegexTextTooLongError extends Error {
  constructor(length: number, limit: number) {
    super(`text is ${length} characters long, over the ${limit} a regex runs on; not checked`);
    this.name = 'RegexTextTooLongError';
  }
}

export class EgressDeniedError extends Error {
  readonly code = 'AIGW_ERR_EGRESS_DENIED';
}

/**
 * A counter store could not answer (unreachable, slow, closed). The caller decides whether
 * to fail open or closed; `cause` holds the backend's own error.
 */
export class CounterStoreUnavailableError extends Error {
  readonly code = 'AIGW_ERR_STORE_UNAVAILABLE' satisfies ErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CounterStoreUnavailableError';
  }
}

export class EventStreamFramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EventStreamFramingError';
  }
}

export class QueryCompileError extends Error {}

export class PlanCompileError extends Error {
  readonly issues: string[];
  constructor(issues: string[]) {
    super(issues.join('; '));
    this.issues = issues;
  }
}

/**
 * A cache store (response store or semantic index) could not answer: unreachable, slow or
 * closed. Callers treat it as a MISS (and log and count it); `cause` holds the backend's error.
 */
export class CacheStoreUnavailableError extends Error {
  readonly code = 'AIGW_ERR_STORE_UNAVAILABLE' satisfies ErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CacheStoreUnavailableError';
  }
}

export class MultipartError extends Error {}

/** A parameter problem found while compiling a check; `path` is relative to the parameters object. */
export class CheckParameterError extends Error {
  readonly path: ReadonlyArray<string | number>;

  constructor(path: ReadonlyArray<string | number>, message: string) {
    super(message);
    this.name = 'CheckParameterError';
    this.path = path;
  }
}

/** Thrown by compileGuardrails: every problem of the config at once, as a 400 (AIGW_ERR_INVALID_CONFIG). */
export class GuardrailConfigError extends GatewayError {
  readonly issues: readonly string[];

  constructor(issues: readonly string[]) {
    super('AIGW_ERR_INVALID_CONFIG', `invalid guardrails: ${issues.join('; ')}`);
    this.name = 'GuardrailConfigError';
    this.issues = issues;
  }
}

export class StateLoadError extends Error {
  readonly issues: string[];
  constructor(issues: string[]) {
    super(`invalid gateway state:\n  ${issues.join('\n  ')}`);
    this.name = 'StateLoadError';
    this.issues = issues;
  }
}
