import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { HEADER, headerValue } from '../gateway-headers.ts';
import { walkPlan, type RoutingRuntime, type WalkProgress } from '../routing/execute-plan.ts';
import { selectRoute } from '../routing/select-route.ts';
import { validateRequestBody, type InferenceEndpoint } from './body-validation.ts';
import { relayResponse } from './relay-response.ts';

// POST /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses: one handler,
// parameterised by endpoint. Order: validate body → pick the plan → walk it (strategies,
// retries, breakers) → relay the answer.

export const INFERENCE_ROUTES: ReadonlyArray<readonly [string, InferenceEndpoint]> = [
  ['/v1/chat/completions', 'chat.completions'],
  ['/v1/completions', 'completions'],
  ['/v1/embeddings', 'embeddings'],
  ['/v1/responses', 'responses'],
];

const MAX_REQUEST_TIMEOUT_MS = 3_600_000;

export function registerInferenceRoutes(app: FastifyInstance, runtime: RoutingRuntime): void {
  for (const [url, endpoint] of INFERENCE_ROUTES) {
    app.post(url, (request, reply) => handleInference(endpoint, url, runtime, request, reply));
  }
}

async function handleInference(
  endpoint: InferenceEndpoint,
  pathname: string,
  runtime: RoutingRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const context = request.gateway;
  const invalid = validateRequestBody(endpoint, request.body);
  if (invalid !== undefined) throw invalid;
  const body = request.body as Record<string, unknown>;
  context.model = body['model'] as string;
  reply.header(HEADER.cacheStatus, 'DISABLED');

  const requestTimeoutMs = parseRequestTimeout(headerValue(request.headers[HEADER.requestTimeout]));
  const forwardHeaders = parseForwardHeaders(headerValue(request.headers[HEADER.forwardHeaders]));
  const selection = selectRoute(request.headers, context.state);
  context.configId = selection.configId;

  const controller = new AbortController();
  // A client that goes away must not keep the provider busy (and billing).
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) {
      context.clientAborted = true;
      controller.abort();
    }
  });
  const progress: WalkProgress = { retries: 0, lastPath: undefined, lastTarget: undefined };
  const result = await walkPlan(
    selection.plan,
    {
      runtime,
      state: context.state,
      endpoint,
      body,
      rawBody: request.rawBody,
      headers: request.headers,
      metadata: context.metadata,
      pathname,
      configId: selection.configId,
      forwardHeaders,
      requestTimeoutMs,
      deadline: requestTimeoutMs === undefined ? Number.POSITIVE_INFINITY : runtime.now() + requestTimeoutMs,
      signal: controller.signal,
    },
    progress,
  ).finally(() => {
    context.retries = progress.retries;
    context.targetPath = progress.lastPath;
    context.provider = progress.lastTarget?.provider;
    if (progress.lastTarget !== undefined) reply.header(HEADER.provider, progress.lastTarget.provider);
    if (progress.lastPath !== undefined) reply.header(HEADER.lastUsedOptionIndex, progress.lastPath);
    reply.header(HEADER.retryAttemptCount, String(progress.retries));
  });

  if (result.kind === 'unavailable') {
    const which = result.labels.length > 0 ? `: ${[...new Set(result.labels)].join(', ')}` : '';
    throw new GatewayError('AIGW_ERR_TARGETS_UNAVAILABLE', `No target available — ${result.reason}${which}.`);
  }
  if (result.kind === 'error') throw result.error;
  const model = result.requestBody['model'];
  if (typeof model === 'string') context.model = model;
  return relayResponse(reply, {
    upstream: result.response,
    target: result.target,
    endpoint,
    requestBody: result.requestBody,
    streamIdleTimeoutMs: result.timeoutMs,
    context,
  });
}

function parseRequestTimeout(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > MAX_REQUEST_TIMEOUT_MS) {
    throw new GatewayError('AIGW_ERR_INVALID_HEADER', `${HEADER.requestTimeout} must be an integer number of milliseconds (1–${MAX_REQUEST_TIMEOUT_MS}).`, {
      param: HEADER.requestTimeout,
    });
  }
  return parsed;
}

const NO_HEADERS: readonly string[] = [];

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
