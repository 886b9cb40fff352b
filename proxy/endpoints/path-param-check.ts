import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { GatewayError } from '../errors.ts';

// Path parameters name one object (a file, a thread, a policy…) and are put back into an
// upstream URL or a store key. Fastify decodes them, so `%2e%2e`, `..%2F..` or `%5c` arrive
// as `..`, `../..`, `\`: put back into a URL they are dot-segments the URL parser resolves
// (`/v1/files/..` → `/v1/`), and the saved key would reach another upstream path. Refused
// here, once, for every route that has parameters; routes without any pay nothing.

/** Decoded `/` or `\` in one segment, or `%2e`/`%2f`/`%5c` left after decoding (double encoding). */
const SEPARATOR_OR_ENCODED = /[/\\]|%(?:2e|2f|5c)/i;
/**
 * The same in a wildcard's rest-of-path, where `/` is allowed, encoded or not: model ids hold
 * slashes and SDKs send them as `%2F` (`anthropic%2Fclaude-…`). Its segments are checked.
 */
const BACKSLASH_OR_ENCODED = /\\|%(?:2e|2f|5c)/i;

/** The problem with one parameter value, or undefined when it names a single object. */
export function pathParamProblem(name: string, value: string): string | undefined {
  if (name === '*') {
    if (BACKSLASH_OR_ENCODED.test(value)) return 'holds a backslash or an encoded character';
    for (const segment of value.split('/')) if (segment === '.' || segment === '..') return 'holds a dot-segment ("." or "..")';
    return undefined;
  }
  if (value === '.' || value === '..') return 'is a dot-segment ("." or "..")';
  if (SEPARATOR_OR_ENCODED.test(value)) return 'holds a path separator or an encoded character';
  return undefined;
}

/** The 400 for the first parameter of the request that is not a single path segment, if any. */
export function checkPathParams(request: FastifyRequest): GatewayError | undefined {
  const params = request.params as Record<string, string | undefined> | undefined;
  if (params === undefined || params === null) return undefined;
  for (const name in params) {
    const value = params[name];
    if (typeof value !== 'string') continue;
    const problem = pathParamProblem(name, value);
    if (problem !== undefined) {
      const param = name === '*' ? 'path' : name;
      return new GatewayError('AIGW_ERR_INVALID_PATH', `The path parameter "${param}" ${problem}; it must name one object.`, { param });
    }
  }
  return undefined;
}

/** onRequest hook refusing a request whose path parameters leave their segment. */
export function refuseUnsafePathParams(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  done(checkPathParams(request));
}

/**
 * For an `onRoute` hook: adds the check to a route whose URL has parameters (`:id`, `*`).
 *
 * @example app.addHook('onRoute', guardPathParams);
 */
export function guardPathParams(route: RouteOptions): void {
  if (!route.url.includes(':') && !route.url.includes('*')) return;
  const existing = route.onRequest;
  route.onRequest = existing === undefined ? [refuseUnsafePathParams] : [refuseUnsafePathParams, ...(Array.isArray(existing) ? existing : [existing])];
}
