import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { sendGatewayError } from '../../error-reply.ts';
import type { GatewayError } from '../../errors.ts';
import { headerValue } from '../../gateway-headers.ts';
import { betaList, type ClientAnthropicHeaders } from '../../providers/anthropic/anthropic-wire.ts';
import { anthropicErrorBody, anthropicErrorType } from './chat-to-messages.ts';

// What /v1/messages does differently from the OpenAI routes around the shared pipeline:
// the provider key may come as x-api-key (the Anthropic SDK's header), the client's
// anthropic-version/-beta travel with the body to native providers, errors and guardrail
// denials are in Anthropic's shape.

/** The request headers as routing sees them: an x-api-key stands for Authorization: Bearer. */
export function messagesRoutingHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const apiKey = headerValue(headers['x-api-key']);
  if (apiKey === undefined || apiKey === '' || headerValue(headers['authorization']) !== undefined) return headers;
  return { ...headers, authorization: `Bearer ${apiKey}` };
}

/** The client's anthropic-version and anthropic-beta, which native providers send with the body. */
export function clientAnthropicHeadersOf(headers: IncomingHttpHeaders): ClientAnthropicHeaders {
  const version = headerValue(headers['anthropic-version']);
  return { version: version === undefined || version === '' ? undefined : version, betas: betaList(headerValue(headers['anthropic-beta'])) };
}

/**
 * The body the cache key covers: with the client's anthropic-version and anthropic-beta
 * (native providers get them, and a beta can change the answer). Hyphenated names cannot
 * clash with a body field; the body sent upstream is not this object.
 */
export function cacheKeyBodyOf(body: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
  const version = headerValue(headers['anthropic-version']);
  const betas = betaList(headerValue(headers['anthropic-beta']));
  return { ...body, 'anthropic-version': version ?? null, 'anthropic-beta': [...betas].sort() };
}

/** The 446 body of a guardrail denial, in Anthropic's error shape plus hook_results. */
export function anthropicDeniedBody(openaiShaped: Record<string, unknown>): Record<string, unknown> {
  const error = openaiShaped['error'] as { message?: unknown } | undefined;
  return { ...anthropicErrorBody('invalid_request_error', String(error?.message ?? 'Blocked by a guardrail.')), hook_results: openaiShaped['hook_results'] };
}

/** The route error handler of /v1/messages*: the gateway's errors in Anthropic's shape. */
export function anthropicErrorHandler(logger: Logger) {
  return function sendAnthropicError(error: FastifyError | GatewayError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    return sendGatewayError(error, request, reply, logger, (gatewayError) => anthropicErrorBody(anthropicErrorType(gatewayError.status), gatewayError.message));
  };
}

