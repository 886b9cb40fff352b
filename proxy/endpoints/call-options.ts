import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../errors.ts';
import { HEADER, headerValue, integerHeader } from '../gateway-headers.ts';

// The gateway's per-call headers on inference routes: how long the call may take, and
// which client headers go upstream with it. Bad values are 400s naming the header.

const MAX_REQUEST_TIMEOUT_MS = 3_600_000;

export interface CallOptions {
  readonly requestTimeoutMs: number | undefined;
  readonly forwardHeaders: readonly string[];
}

/** The gateway's per-call headers: request timeout and the client headers to forward. */
export function callOptionsOf(headers: IncomingHttpHeaders): CallOptions {
  // Most requests send neither header: one shared object, no parsing.
  if (headers[HEADER.requestTimeout] === undefined && headers[HEADER.forwardHeaders] === undefined) return NO_OPTIONS;
  return {
    requestTimeoutMs: integerHeader(headerValue(headers[HEADER.requestTimeout]), HEADER.requestTimeout, 1, MAX_REQUEST_TIMEOUT_MS),
    forwardHeaders: parseForwardHeaders(headerValue(headers[HEADER.forwardHeaders])),
  };
}

const NO_HEADERS: readonly string[] = [];
const NO_OPTIONS: CallOptions = Object.freeze({ requestTimeoutMs: undefined, forwardHeaders: NO_HEADERS });

/** A JSON array of names, or a comma-separated list. */
function parseForwardHeaders(value: string | undefined): readonly string[] {
  if (value === undefined || value.trim() === '') return NO_HEADERS;
  const text = value.trim();
  let names: unknown = undefined;
  if (text.startsWith('[')) {
    try {
      names = JSON.parse(text);
    } catch {
      names = undefined;
    }
  } else {
    names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  }
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))) {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', `${HEADER.forwardHeaders} must be a JSON array of header names or a comma-separated list.`, {
      param: HEADER.forwardHeaders,
    });
  }
  return names as string[];
}
