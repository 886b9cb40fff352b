import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { authenticateApiKey } from './auth/api-key-auth.ts';
import type { GatewayScope, GatewayState } from './config/gateway-state.ts';
import { registerInferenceRoutes, type InferenceDeps } from './endpoints/inference-routes.ts';
import { GatewayError, isGatewayError, toErrorBody } from './errors.ts';
import { HEADER, headerValue } from './gateway-headers.ts';
import type { GatewayMetrics } from './observability/gateway-metrics.ts';
import { observeRequest } from './observability/observe-request.ts';
import { logRequest } from './observability/request-log.ts';
import type { RequestRecord, RequestRecordSink } from './observability/request-record.ts';
import { newRequestContext, type RequestContext } from './request-context.ts';

// The data-plane HTTP server: hooks for trace id, auth and metadata; the inference routes;
// health, readiness and metrics; errors in the OpenAI shape, converted here once.

export interface GatewayServerOptions {
  initialState: GatewayState;
  logger: Logger;
  metrics: GatewayMetrics;
  inference: InferenceDeps;
  /** Control-plane routes (prompt render, policies) mounted in-process in standalone mode. */
  controlPlane?: FastifyPluginAsync | undefined;
  /** Receives a record of every finished /v1 request (the request log store); must not block. */
  requestSink?: RequestRecordSink | undefined;
  /** Most /v1 requests in flight at once; beyond it, a fast 503 with retry-after. */
  maxInFlight?: number | undefined;
  /** More route plugins (batches, files, logs…). */
  plugins?: readonly FastifyPluginAsync[] | undefined;
  /** Largest accepted request body (bytes); larger → 413. */
  bodyLimitBytes?: number;
}

export interface GatewayServer {
  readonly app: FastifyInstance;
  /** The snapshot new requests will use. */
  currentState(): GatewayState;
  /** Atomically switches new requests to `state`; in-flight requests keep theirs. */
  swapState(state: GatewayState): void;
  /** Readiness goes false (e.g. while draining). */
  setReady(ready: boolean): void;
}

export const DEFAULT_BODY_LIMIT = 20 * 1024 * 1024;
const MAX_TRACE_ID_LENGTH = 256;

declare module 'fastify' {
  interface FastifyRequest {
    /** The client's body bytes, kept so an unchanged body is forwarded untouched. */
    rawBody: Buffer | undefined;
  }
}

export function createGatewayServer(options: GatewayServerOptions): GatewayServer {
  let state = options.initialState;
  let ready = true;
  const { logger, metrics } = options;
  const bodyLimit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;

  const app = Fastify({
    logger: false,
    bodyLimit,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    keepAliveTimeout: 72_000,
    // Slow clients (slowloris) cannot hold a connection open forever sending a request.
    requestTimeout: 120_000,
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true },
  });

  // Headers must arrive promptly; bodies within requestTimeout.
  app.server.headersTimeout = 30_000;
  app.decorateRequest('gateway', null as never);
  app.decorateRequest('rawBody', undefined);

  // Keep the raw bytes and parse them once; the bytes are what gets forwarded.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    const raw = body as Buffer;
    request.rawBody = raw;
    if (raw.length === 0) {
      done(new GatewayError('AIGW_ERR_INVALID_JSON', 'Request body is empty; expected a JSON object.'), undefined);
      return;
    }
    try {
      done(null, JSON.parse(raw.toString('utf8')));
    } catch (error) {
      done(new GatewayError('AIGW_ERR_INVALID_JSON', `Request body is not valid JSON: ${(error as Error).message}`), undefined);
    }
  });

  // Overload: a bounded number of requests in flight; past it, refuse fast rather than let
  // latency and memory grow without bound.
  const maxInFlight = options.maxInFlight ?? 2048;
  let inFlight = 0;
  const release = (): void => {
    inFlight--;
  };

  app.addHook('onRequest', async (request, reply) => {
    const traceId = traceIdFor(headerValue(request.headers[HEADER.traceId]));
    request.gateway = newRequestContext(traceId, state);
    reply.header(HEADER.traceId, traceId);
    if (!request.url.startsWith('/v1/') && request.url !== '/v1') return;
    if (inFlight >= maxInFlight) {
      metrics.overloadRejections.inc();
      throw new GatewayError('AIGW_ERR_OVERLOADED', 'The gateway is at capacity; retry shortly.', { headers: { 'retry-after': '1' } });
    }
    inFlight++;
    reply.raw.once('close', release);
    // Routes declare the scope they need; the rest (incl. unknown routes) need a valid key.
    const scope = (request.routeOptions.config as { gatewayScope?: GatewayScope } | undefined)?.gatewayScope;
    request.gateway.apiKey = authenticateApiKey(request.gateway.state, request.headers[HEADER.apiKey], scope);
    request.gateway.metadata = parseMetadata(headerValue(request.headers[HEADER.metadata]));
  });

  app.addHook('onResponse', async (request, reply) => {
    const context = request.gateway;
    if (context === null || context === undefined) return;
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/metrics' || route === '/health' || route === '/ready') return;
    const status = reply.statusCode;
    observeRequest(metrics, context, route, status);
    const record = recordOf(context, request.method, route, status);
    logRequest(logger, record, context.clientAborted);
    if (options.requestSink !== undefined && route.startsWith('/v1/')) options.requestSink(record);
  });

  app.setErrorHandler((error: FastifyError | GatewayError, request, reply) => sendError(error, request, reply, logger));
  app.setNotFoundHandler((request, reply) => {
    const error = new GatewayError('AIGW_ERR_NOT_FOUND', `Unknown route: ${request.method} ${request.url.split('?')[0]}`);
    return sendError(error, request, reply, logger);
  });

  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_request, reply) => {
    if (!ready) return reply.code(503).send({ status: 'draining' });
    return { status: 'ready', config_hash: state.hash };
  });
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  registerInferenceRoutes(app, options.inference);
  if (options.controlPlane !== undefined) void app.register(options.controlPlane);
  for (const plugin of options.plugins ?? []) void app.register(plugin);

  return {
    app,
    currentState: () => state,
    swapState(next) {
      state = next;
    },
    setReady(value) {
      ready = value;
    },
  };
}

function recordOf(context: RequestContext, method: string, route: string, status: number): RequestRecord {
  return {
    id: randomUUID(),
    traceId: context.traceId,
    startedAt: context.startedAtMs,
    method,
    route,
    status: context.clientAborted ? 499 : status,
    latencyMs: Number(process.hrtime.bigint() - context.startedAt) / 1e6,
    ttftMs: context.ttftMs,
    apiKeyId: context.apiKey?.id,
    workspace: context.apiKey?.workspace,
    configId: context.configId,
    targetPath: context.targetPath,
    provider: context.provider,
    model: context.model,
    metadata: context.metadata,
    promptTokens: context.usage?.prompt,
    completionTokens: context.usage?.completion,
    totalTokens: context.usage?.total,
    cacheStatus: context.cacheStatus,
    retries: context.retries,
    guardrailVerdict: context.guardrailVerdict,
    errorCode: context.errorCode,
  };
}

function traceIdFor(presented: string | undefined): string {
  if (presented !== undefined && presented !== '' && presented.length <= MAX_TRACE_ID_LENGTH) return presented;
  return randomUUID();
}

function parseMetadata(value: string | undefined): Record<string, unknown> | undefined {
  if (value === undefined || value === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', `${HEADER.metadata} must be a JSON object.`, { param: HEADER.metadata });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', `${HEADER.metadata} must be a JSON object.`, { param: HEADER.metadata });
  }
  return parsed as Record<string, unknown>;
}

function sendError(error: FastifyError | GatewayError, request: FastifyRequest, reply: FastifyReply, logger: Logger): FastifyReply {
  const gatewayError = isGatewayError(error) ? error : fromFastifyError(error);
  if (gatewayError.code === 'AIGW_ERR_INTERNAL') {
    logger.error({ trace_id: request.gateway?.traceId, err: { message: error.message, code: error.code } }, 'internal error');
  }
  if (request.gateway !== null && request.gateway !== undefined) request.gateway.errorCode = gatewayError.code;
  if (reply.sent || reply.raw.headersSent) return reply;
  if (gatewayError.headers !== undefined) reply.headers(gatewayError.headers);
  return reply.code(gatewayError.status).header('content-type', 'application/json; charset=utf-8').send(toErrorBody(gatewayError));
}

function fromFastifyError(error: FastifyError): GatewayError {
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
