import Fastify, { type FastifyError, type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { authenticateMatchedRoute, isPublicRoute, PUBLIC_ROUTE } from './auth/route-access.ts';
import type { GatewayState } from './config/gateway-state.ts';
import { normaliseVendorHeaders } from './config/vendor-names.ts';
import { registerInferenceRoutes, type InferenceDeps } from './endpoints/inference-routes.ts';
import { registerConfigurationRoutes } from './endpoints/configuration-routes.ts';
import type { ClusterViewFetch } from './console/cluster-view.ts';
import { guardPathParams } from './endpoints/path-param-check.ts';
import { sendGatewayError } from './error-reply.ts';
import { GatewayError, toErrorBody } from './errors.ts';
import { HEADER, headerValue } from './gateway-headers.ts';
import type { GatewayMetrics } from './observability/gateway-metrics.ts';
import type { RequestRecordSink } from './observability/request-record.ts';
import { armRequestFinish, type FinishDeps } from './observability/request-finish.ts';
import { randomRecordId } from './observability/record-id.ts';
import { environmentTracer, type RequestTracer } from './observability/tracing.ts';
import { findDuplicateKey } from './openai/json-duplicate-keys.ts';
import { newRequestContext } from './request-context.ts';

// The data-plane HTTP server: hooks for trace id, auth and metadata; the inference routes;
// health, readiness and metrics; errors in the OpenAI shape, converted here once.

export interface GatewayServerOptions {
  initialState: GatewayState;
  logger: Logger;
  metrics: GatewayMetrics;
  inference: InferenceDeps;
  /** Control-plane routes (prompt render, policies) mounted in-process in standalone mode. */
  controlPlane?: FastifyPluginAsync | undefined;
  /** In a cluster: the operator's replicas and custom resources for GET /v1/configuration. */
  clusterView?: ClusterViewFetch | undefined;
  /** Receives a record of every finished /v1 request (the request log store); must not block. */
  requestSink?: RequestRecordSink | undefined;
  /** Most /v1 requests in flight at once; beyond it, a fast 503 with retry-after. */
  maxInFlight?: number | undefined;
  /** More route plugins (batches, files, logs…). */
  plugins?: readonly FastifyPluginAsync[] | undefined;
  /** Most /v1 requests one API key may have in flight (default: a quarter of maxInFlight); beyond it, a fast 429. */
  maxInFlightPerKey?: number | undefined;
  /** Largest accepted request body (bytes); larger → 413. */
  bodyLimitBytes?: number;
  /** OpenTelemetry tracing; default: what the OTEL_* environment asks for (off when unset); null: off. */
  tracer?: RequestTracer | null | undefined;
  /** Serve GET /metrics on this (client-facing) port; false when a separate metrics port serves it. */
  metricsRoute?: boolean | undefined;
}

export interface GatewayServer {
  readonly app: FastifyInstance;
  /** The snapshot new requests will use. */
  currentState(): GatewayState;
  /** Atomically switches new requests to `state`; in-flight requests keep theirs. */
  swapState(state: GatewayState): void;
  /** Readiness goes false (e.g. while draining). */
  setReady(ready: boolean): void;
  /** Every route registered so far, with who may call it (for the default-deny test and docs). */
  routes(): readonly RegisteredRoute[];
}

export interface RegisteredRoute {
  readonly method: string;
  readonly url: string;
  readonly public: boolean;
  readonly scope: string | undefined;
}

export const DEFAULT_BODY_LIMIT = 20 * 1024 * 1024;
const MAX_TRACE_ID_LENGTH = 256;

declare module 'fastify' {
  interface FastifyRequest {
    /** The client's body bytes, kept so an unchanged body is forwarded untouched. */
    rawBody: Buffer | undefined;
    /** The request holds one of the server's in-flight slots (given back when it closes). */
    holdsSlot: boolean;
    /** …and one of this key's. */
    slotKeyId: string | undefined;
  }
}

// Bodies are validated with zod (proxy/openai/) and answers serialised by hand: no route
// declares a JSON schema, so fastify's Ajv and fast-json-stringify compilers (≈ 13 MiB and
// tens of ms at start-up) are never loaded. A route that declared one would fail at start.
const NO_JSON_SCHEMAS = {
  compilersFactory: {
    buildValidator: () => () => {
      throw new Error('gateway routes validate with zod, not JSON schemas');
    },
    buildSerializer: () => () => {
      throw new Error('gateway routes serialise their answers, not with JSON schemas');
    },
  },
};

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
    // Malformed HTTP (400) and oversized headers (431) still answer in the OpenAI shape.
    clientErrorHandler: answerClientError,
    schemaController: NO_JSON_SCHEMAS,
  });

  const tracer = options.tracer === undefined ? environmentTracer : (options.tracer ?? undefined);
  const finishDeps: FinishDeps = { logger, metrics, requestSink: options.requestSink, tracer };
  // Spans still batched go out before the process ends.
  if (tracer !== undefined) app.addHook('onClose', async () => tracer.shutdown());

  const routes: RegisteredRoute[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      routes.push({ method, url: route.url, public: route.config?.public === true, scope: route.config?.gatewayScope });
    }
  });

  // Path parameters that leave their segment (`..`, `%2F`…) are refused on every route that has any.
  app.addHook('onRoute', guardPathParams);

  // Headers must arrive promptly; bodies within requestTimeout.
  app.server.headersTimeout = 30_000;
  app.decorateRequest('gateway', null as never);
  app.decorateRequest('rawBody', undefined);

  // Keep the raw bytes and parse them once; the bytes are what gets forwarded. JSON only:
  // text/plain (Fastify's other default) is a 415, not a string body.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, function parseJsonBody(request, body, done) {
    const raw = body as Buffer;
    request.rawBody = raw;
    if (raw.length === 0) {
      done(new GatewayError('AIGW_ERR_INVALID_JSON', 'Request body is empty; expected a JSON object.'), undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch (error) {
      done(new GatewayError('AIGW_ERR_INVALID_JSON', `Request body is not valid JSON: ${(error as Error).message}`), undefined);
      return;
    }
    // The parsed object is validated and the raw bytes forwarded: both must mean one thing.
    const duplicate = findDuplicateKey(raw);
    if (duplicate !== undefined) {
      done(new GatewayError('AIGW_ERR_DUPLICATE_KEY', `Request body has the key "${duplicate}" more than once; send each key once.`, { param: duplicate }), undefined);
      return;
    }
    done(null, parsed);
  });

  // Overload: a bounded number of requests in flight; past it, refuse fast rather than let
  // latency and memory grow without bound. Per key, after auth: one key's slow uploads or
  // streams hold at most its share of that budget, so another key still gets in (past its
  // share a key gets a fast 429). Both slots are given back when the response closes, after
  // its accounting (armRequestFinish's one 'close' listener).
  const maxInFlight = options.maxInFlight ?? 2048;
  let inFlight = 0;
  const maxInFlightPerKey = options.maxInFlightPerKey ?? defaultInFlightPerKey(maxInFlight);
  const inFlightByKey = new Map<string, number>();
  const releaseSlots = (request: FastifyRequest): void => {
    if (!request.holdsSlot) return;
    request.holdsSlot = false;
    inFlight--;
    const keyId = request.slotKeyId;
    if (keyId === undefined) return;
    const left = (inFlightByKey.get(keyId) ?? 1) - 1;
    if (left <= 0) inFlightByKey.delete(keyId);
    else inFlightByKey.set(keyId, left);
  };
  app.decorateRequest('holdsSlot', false);
  app.decorateRequest('slotKeyId', undefined);

  // Default deny, decided on the route that matched (auth/route-access.ts). A callback hook,
  // not an async one: no promise per request on the hot path.
  app.addHook('onRequest', function admitRequest(request, reply, done) {
    const traceId = traceIdFor(headerValue(request.headers[HEADER.traceId]));
    request.gateway = newRequestContext(traceId, state);
    reply.header(HEADER.traceId, traceId);
    armRequestFinish(request, reply, finishDeps, releaseSlots);
    if (isPublicRoute(request)) return done();
    if (inFlight >= maxInFlight) {
      metrics.overloadRejections.inc();
      return done(new GatewayError('AIGW_ERR_OVERLOADED', 'The gateway is at capacity; retry shortly.', { headers: { 'retry-after': '1' } }));
    }
    inFlight++;
    request.holdsSlot = true;
    try {
      request.gateway.apiKey = authenticateMatchedRoute(request, request.gateway.state);
      request.gateway.metadata = parseMetadata(headerValue(request.headers[HEADER.metadata]));
      normaliseVendorHeaders(request.raw.headers);
    } catch (error) {
      return done(error as Error);
    }
    const keyId = request.gateway.apiKey?.id;
    if (keyId === undefined) return done();
    const held = inFlightByKey.get(keyId) ?? 0;
    if (held >= maxInFlightPerKey) {
      return done(
        new GatewayError('AIGW_ERR_KEY_IN_FLIGHT_LIMIT', `This API key has ${held} requests in flight, the most one key may hold; retry when one finishes.`, {
          headers: { 'retry-after': '1' },
        }),
      );
    }
    inFlightByKey.set(keyId, held + 1);
    request.slotKeyId = keyId;
    done();
  });

  app.setErrorHandler((error: FastifyError | GatewayError, request, reply) => sendError(error, request, reply, logger));
  app.setNotFoundHandler((request, reply) => {
    const error = new GatewayError('AIGW_ERR_NOT_FOUND', `Unknown route: ${request.method} ${request.url.split('?')[0]}`);
    return sendError(error, request, reply, logger);
  });

  app.get('/health', PUBLIC_ROUTE, async () => ({ status: 'ok' }));
  app.get('/ready', PUBLIC_ROUTE, async (_request, reply) => {
    if (!ready) return reply.code(503).send({ status: 'draining' });
    return { status: 'ready', config_hash: state.hash };
  });
  // Metrics name models, policies and cost: with a metrics port they are not on the clients' port.
  if (options.metricsRoute !== false) {
    app.get('/metrics', PUBLIC_ROUTE, async (_request, reply) => {
      reply.header('content-type', metrics.registry.contentType);
      return metrics.registry.metrics();
    });
  }

  registerInferenceRoutes(app, options.inference);
  registerConfigurationRoutes(app, { currentState: () => state, metrics, clusterView: options.clusterView });
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
    routes: () => routes,
  };
}

/** A quarter of the global budget: one key (or three) at its limit leaves room for the others. */
export function defaultInFlightPerKey(maxInFlight: number): number {
  return Math.max(1, Math.floor(maxInFlight / 4));
}

// A client's trace id is echoed and logged: printable ASCII only, bounded.
const TRACE_ID = /^[\x21-\x7e]+$/;

function traceIdFor(presented: string | undefined): string {
  if (presented !== undefined && presented.length <= MAX_TRACE_ID_LENGTH && TRACE_ID.test(presented)) return presented;
  // Time-ordered like record ids: the log store's trace-id index is appended to.
  return randomRecordId();
}

// Node's HTTP parser rejects the request before Fastify sees it; answer in the OpenAI shape
// and close (the connection's framing can no longer be trusted).
function answerClientError(error: Error & { code?: string }, socket: import('node:net').Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const gatewayError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new GatewayError('AIGW_ERR_HEADERS_TOO_LARGE', 'Request headers are too large.')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new GatewayError('AIGW_ERR_REQUEST_TIMEOUT', 'The request was not received in time.')
        : new GatewayError('AIGW_ERR_MALFORMED_REQUEST', 'The request is not valid HTTP.');
  const body = JSON.stringify(toErrorBody(gatewayError));
  const reason = gatewayError.status === 431 ? 'Request Header Fields Too Large' : gatewayError.status === 408 ? 'Request Timeout' : 'Bad Request';
  socket.end(
    `HTTP/1.1 ${gatewayError.status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
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
  return sendGatewayError(error, request, reply, logger);
}
