import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { GatewayError, isGatewayError, toErrorBody } from './errors.ts';

// Errors are converted to an answer once, at the edge (DESIGN.md, STYLE.md): here. The body's
// shape is the route's — OpenAI's by default, Anthropic's on /v1/messages*.

/** A Fastify error (parser, body limit, …) as the gateway error it means. */
export function fromFastifyError(error: FastifyError): GatewayError {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('AIGW_ERR_BODY_TOO_LARGE', 'Request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('AIGW_ERR_UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type; send application/json.', {
        param: 'content-type',
      });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new GatewayError('AIGW_ERR_INVALID_JSON', 'Request body is not valid JSON.');
    default:
      break;
  }
  if (typeof error.code === 'string' && error.code.startsWith('UND_ERR')) {
    return new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `The provider's answer broke off (${error.code}).`, { cause: error });
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new GatewayError('AIGW_ERR_INVALID_BODY', error.message, { status });
  }
  return new GatewayError('AIGW_ERR_INTERNAL', 'Internal gateway error.', { cause: error });
}

/**
 * Sends `error` as the answer (unless one went out already), recording its code on the
 * request; internal errors are logged.
 */
export function sendGatewayError(
  error: FastifyError | GatewayError,
  request: FastifyRequest,
  reply: FastifyReply,
  logger: Logger,
  bodyOf: (error: GatewayError) => unknown = toErrorBody,
): FastifyReply {
  const gatewayError = isGatewayError(error) ? error : fromFastifyError(error);
  if (gatewayError.code === 'AIGW_ERR_INTERNAL') {
    logger.error({ trace_id: request.gateway?.traceId, err: { message: error.message, code: error.code } }, 'internal error');
  }
  if (request.gateway !== null && request.gateway !== undefined) request.gateway.errorCode = gatewayError.code;
  if (reply.sent || reply.raw.headersSent) return reply;
  if (gatewayError.headers !== undefined) reply.headers(gatewayError.headers);
  return reply.code(gatewayError.status).header('content-type', 'application/json; charset=utf-8').send(bodyOf(gatewayError));
}
