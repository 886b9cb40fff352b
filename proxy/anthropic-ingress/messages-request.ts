import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { sendGatewayError } from '../error-reply.ts';
import type { GatewayError } from '../errors.ts';
import { headerValue } from '../gateway-headers.ts';
import { betaList, CLIENT_ANTHROPIC_HEADERS, type ClientAnthropicHeaders } from '../providers/anthropic/anthropic-wire.ts';
import type { ContextUsage, RequestContext } from '../request-context.ts';
import { anthropicErrorBody, anthropicErrorType } from './chat-to-messages.ts';
import type { MessagesStreamReader } from './messages-stream-reader.ts';

// What /v1/messages does differently from the OpenAI routes around the shared pipeline:
// the provider key may come as x-api-key (the Anthropic SDK's header), the client's
// anthropic-version/-beta travel with the body to native providers, errors and guardrail
// denials are in Anthropic's shape, and usage counts Anthropic's cache tokens.

/** The request headers as routing sees them: an x-api-key stands for Authorization: Bearer. */
export function messagesRoutingHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const apiKey = headerValue(headers['x-api-key']);
  if (apiKey === undefined || apiKey === '' || headerValue(headers['authorization']) !== undefined) return headers;
  return { ...headers, authorization: `Bearer ${apiKey}` };
}

/** The body with the client's anthropic-version and anthropic-beta attached (never serialised). */
export function withClientAnthropicHeaders(body: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
  const version = headerValue(headers['anthropic-version']);
  const carried: ClientAnthropicHeaders = {
    version: version === undefined || version === '' ? undefined : version,
    betas: betaList(headerValue(headers['anthropic-beta'])),
  };
  return { ...body, [CLIENT_ANTHROPIC_HEADERS]: carried };
}

/** The 446 body of a guardrail denial, in Anthropic's error shape plus hook_results. */
export function anthropicDeniedBody(openaiShaped: Record<string, unknown>): Record<string, unknown> {
  const error = openaiShaped['error'] as { message?: unknown } | undefined;
  return { ...anthropicErrorBody('invalid_request_error', String(error?.message ?? 'Blocked by a guardrail.')), hook_results: openaiShaped['hook_results'] };
}

/**
 * The request context as the relay writes it, with usage taken from the Anthropic events
 * when the stream reported them: the relay's own reader sees only message_delta, which
 * lacks the input and cache tokens of message_start. Usage carries the cache tokens too.
 */
export function accountingContext(context: RequestContext, reader: MessagesStreamReader): RequestContext {
  return new Proxy(context, {
    set(target, key, value: unknown) {
      const usage = key === 'usage' && reader.sawUsage ? usageOfTotals(reader) : value;
      return Reflect.set(target, key, usage);
    },
  });
}

/**
 * Anthropic reports input_tokens apart from cache writes and reads; the context's prompt
 * counts all three (as OpenAI's prompt_tokens counts cached ones), with the parts named.
 */
export function usageOfTotals(reader: MessagesStreamReader): ContextUsage {
  const { inputTokens, cacheCreationTokens, cacheReadTokens, outputTokens } = reader.usage;
  const prompt = inputTokens + cacheCreationTokens + cacheReadTokens;
  return { prompt, completion: outputTokens, total: prompt + outputTokens, cachedPrompt: cacheReadTokens, cacheWrite: cacheCreationTokens };
}

/** The route error handler of /v1/messages*: the gateway's errors in Anthropic's shape. */
export function anthropicErrorHandler(logger: Logger) {
  return function sendAnthropicError(error: FastifyError | GatewayError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    return sendGatewayError(error, request, reply, logger, (gatewayError) => anthropicErrorBody(anthropicErrorType(gatewayError.status), gatewayError.message));
  };

}

