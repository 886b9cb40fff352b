import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import { selectRoute } from '../routing/select-route.ts';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import { sendUpstream } from '../upstream/upstream-agent.ts';
import { validateRequestBody, type InferenceEndpoint } from './body-validation.ts';
import { relayResponse } from './relay-response.ts';

// POST /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses: one handler,
// parameterised by endpoint. Order: validate body → pick the config tree → resolve the
// leaf → call upstream → relay.

export const INFERENCE_ROUTES: ReadonlyArray<readonly [string, InferenceEndpoint]> = [
  ['/v1/chat/completions', 'chat.completions'],
  ['/v1/completions', 'completions'],
  ['/v1/embeddings', 'embeddings'],
  ['/v1/responses', 'responses'],
];

export function registerInferenceRoutes(app: FastifyInstance, dispatcher: Dispatcher): void {
  for (const [url, endpoint] of INFERENCE_ROUTES) {
    app.post(url, (request, reply) => handleInference(endpoint, dispatcher, request, reply));
  }
}

async function handleInference(
  endpoint: InferenceEndpoint,
  dispatcher: Dispatcher,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const context = request.gateway;
  const invalid = validateRequestBody(endpoint, request.body);
  if (invalid !== undefined) throw invalid;
  const body = request.body as Record<string, unknown>;
  context.model = body['model'] as string;
  reply.header(HEADER.cacheStatus, 'DISABLED');

  const selection = selectRoute(request.headers, context.state);
  context.configId = selection.configId;
  const target = resolveTarget(singleLeaf(selection.config), 'config', context.state, request.headers);
  context.provider = target.provider;
  context.targetPath = target.path;
  reply.header(HEADER.provider, target.provider);
  if (!target.adapter.supportsEndpoint(endpoint)) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no ${request.url} endpoint.`, {
      param: HEADER.provider,
    });
  }

  const plan = await target.adapter.planRequest({ target, endpoint, body, bodyChanged: false });
  const controller = new AbortController();
  // A client that goes away must not keep the provider busy (and billing).
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) {
      context.clientAborted = true;
      controller.abort();
    }
  });
  const upstream = await sendUpstream(dispatcher, { plan, clientBody: request.rawBody, signal: controller.signal }, target.provider);
  reply.header(HEADER.lastUsedOptionIndex, target.path);
  reply.header(HEADER.retryAttemptCount, String(context.retries));
  return relayResponse(reply, { upstream, target, endpoint, requestBody: body, context });
}

// Routing strategies (loadbalance, fallback, conditional) belong to the routing engine;
// until it lands, a config must be a single target.
function singleLeaf(config: RoutingConfig): RoutingConfig {
  if (config.strategy === undefined && config.targets === undefined) return config;
  if (config.strategy?.mode === 'single' && config.targets?.length === 1 && config.targets[0] !== undefined) {
    return config.targets[0];
  }
  throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Routing strategy "${config.strategy?.mode}" is not supported yet.`, {
    param: HEADER.config,
  });
}
