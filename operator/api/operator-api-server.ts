import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { authenticateMatchedRoute, isPublicRoute, PUBLIC_ROUTE } from '../../proxy/auth/route-access.ts';
import { guardPathParams } from '../../proxy/endpoints/path-param-check.ts';
import type { GatewayState } from '../../proxy/config/gateway-state.ts';
import { GatewayError, isGatewayError, toErrorBody } from '../../proxy/errors.ts';
import type { RateLimitPolicy } from '../../proxy/ratelimit/policy-schema.ts';
import type { PolicyStore } from '../../proxy/ratelimit/policy-store.ts';
import { newRequestContext } from '../../proxy/request-context.ts';
import { policyRoutes } from './policy-routes.ts';
import { promptRoutes } from './prompt-routes.ts';
import { usageLimitRoutes } from './usage-limit-routes.ts';
import { clusterViewRoutes, type ClusterViewSourceOptions } from './cluster-view-routes.ts';
import type { UsageLimitStore } from '../../proxy/budgets/usage-limit-store.ts';
import type { UsageLimitPolicy } from '../../proxy/budgets/usage-limit-schema.ts';

// The control-plane API served by the operator (every replica): the same policy and prompt
// routes as standalone, authenticated against GatewayAPIKey resources through the state
// rendered from the operator's cache, with errors in the OpenAI shape. Proxies forward
// /v1/prompts/* and /v1/policies/* here, so users keep one base URL.

export interface OperatorApiOptions {
  /** The state rendered from the current cache; undefined until the informers synced. */
  readonly currentState: () => GatewayState | undefined;
  readonly policyStore: PolicyStore;
  /** Policies applied with kubectl: listed and enforced, read-only through the API. */
  readonly statePolicies: () => readonly RateLimitPolicy[];
  /** API-created UsageLimitPolicy resources and those applied with kubectl (read-only); absent: no usage-limit routes. */
  readonly usageLimits?: { readonly store: UsageLimitStore; readonly statePolicies: () => readonly UsageLimitPolicy[] };
  /** Replicas and custom resources for the console (GET /v1/configuration/cluster); absent: no such route. */
  readonly clusterView?: ClusterViewSourceOptions;
  readonly logger: Logger;
  readonly port: number;
  readonly host: string;
}

export interface OperatorApi {
  readonly app: FastifyInstance;
  readonly url: string;
  close(): Promise<void>;
}

const TRACE_HEADER = 'x-gateway-trace-id';

export async function startOperatorApi(options: OperatorApiOptions): Promise<OperatorApi> {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024, requestIdHeader: false, routerOptions: { ignoreTrailingSlash: true } });
  app.decorateRequest('gateway', null as never);
  // Policy and prompt ids end up in store keys and API paths: `..` and encoded separators are refused.
  app.addHook('onRoute', guardPathParams);

  app.addHook('onRequest', async (request, reply) => {
    const presented = request.headers[TRACE_HEADER];
    const traceId = typeof presented === 'string' && presented !== '' && presented.length <= 256 ? presented : randomUUID();
    reply.header(TRACE_HEADER, traceId);
    // Default deny on the matched route, as in the proxy (proxy/auth/route-access.ts).
    if (isPublicRoute(request)) return;
    const state = options.currentState();
    if (state === undefined) throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'The control plane is starting (custom resources not listed yet); retry shortly.');
    request.gateway = newRequestContext(traceId, state);
    request.gateway.apiKey = authenticateMatchedRoute(request, state);
  });

  app.setErrorHandler((error: FastifyError | GatewayError, request, reply) => {
    const gatewayError = isGatewayError(error)
      ? error
      : error.statusCode !== undefined && error.statusCode < 500
        ? new GatewayError('AIGW_ERR_INVALID_BODY', error.message, { status: error.statusCode })
        : new GatewayError('AIGW_ERR_INTERNAL', 'Internal control-plane error.', { cause: error });
    if (gatewayError.status >= 500) options.logger.error({ url: request.url, err: { message: error.message } }, 'control-plane API error');
    return reply.code(gatewayError.status).header('content-type', 'application/json; charset=utf-8').send(toErrorBody(gatewayError));
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new GatewayError('AIGW_ERR_NOT_FOUND', `Unknown route: ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(404).send(toErrorBody(error));
  });

  app.get('/healthz', PUBLIC_ROUTE, async () => ({ status: 'ok' }));
  await app.register(policyRoutes({ store: options.policyStore, statePolicies: options.statePolicies }));
  if (options.usageLimits !== undefined) await app.register(usageLimitRoutes(options.usageLimits));
  await app.register(promptRoutes({ getPrompt: (id) => options.currentState()?.prompts.get(id) }));
  if (options.clusterView !== undefined) await app.register(clusterViewRoutes(options.clusterView));

  await app.listen({ port: options.port, host: options.host });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('control-plane API is not listening on TCP');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { app, url: `http://${host}:${address.port}`, close: () => app.close() };
}
