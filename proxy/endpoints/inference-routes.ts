import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { HEADER, headerValue, integerHeader } from '../gateway-headers.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { applyPrompt } from '../prompts/apply-prompt.ts';
import type { RateLimitPolicy } from '../ratelimit/policy-schema.ts';
import type { Admission, RateLimiter } from '../ratelimit/rate-limiter.ts';
import type { RequestContext } from '../request-context.ts';
import { walkPlan, type RoutingRuntime, type WalkProgress } from '../routing/execute-plan.ts';
import type { PlanNode } from '../routing/routing-plan.ts';
import { selectRoute } from '../routing/select-route.ts';
import { validateRequestBody } from '../openai/body-validation.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { relayResponse, type StreamGuard } from './relay-response.ts';
import { messagesRelayAdapter } from '../anthropic-ingress/messages-adapter.ts';
import {
  accountingContext,
  anthropicDeniedBody,
  anthropicErrorHandler,
  messagesRoutingHeaders,
  withClientAnthropicHeaders,
} from '../anthropic-ingress/messages-request.ts';
import { MessagesStreamReader } from '../anthropic-ingress/messages-stream-reader.ts';
import { registerModelsRoutes } from './models-routes.ts';
import { registerForwardedRoutes } from './openai-forwarded-routes.ts';
import type { ResponseCache } from '../cache/response-cache.ts';
import { StreamAssembler } from '../cache/stream-assembler.ts';
import type { HookContext } from '../guardrails/run-hooks.ts';
import {
  deniedBody,
  GUARDRAIL_DENIED_STATUS,
  GUARDRAIL_FAILED_STATUS,
  GuardedStreamTail,
  guardrailsOf,
  hookResultsOf,
  logAsync,
  runAfterHooks,
  runInput,
  runOptionsOf,
  verdictOf,
  type CompiledGuardrails,
  type GuardrailRuntime,
  type HooksOutcome,
} from './guardrail-flow.ts';
import { cacheObserver, cacheRequestOf, countLookup, replyFromCache, type CacheFlow } from './response-caching.ts';

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

export interface InferenceDeps {
  readonly routing: RoutingRuntime;
  /** Rate-limit enforcement; undefined when no limiter is wired. */
  readonly rateLimiter: RateLimiter | undefined;
  /** Policies created through the API (the state file's come with the snapshot). */
  readonly dynamicPolicies: () => readonly RateLimitPolicy[];
  /** The response cache; undefined disables caching whatever configs say. */
  readonly cache: ResponseCache | undefined;
  /** What hooks and guardrails need: metrics, the log (async results), the egress-guarded agent. */
  readonly guardrails: GuardrailRuntime;
}

/** Anthropic's Messages API: same pipeline, Anthropic-shaped bodies and errors. */
export const MESSAGES_ROUTES: ReadonlyArray<readonly [string, InferenceEndpoint]> = [
  ['/v1/messages', 'messages'],
  ['/v1/messages/count_tokens', 'messages.count_tokens'],
];

export function registerInferenceRoutes(app: FastifyInstance, deps: InferenceDeps): void {
  for (const [url, endpoint] of INFERENCE_ROUTES) {
    app.post(url, { config: { gatewayScope: 'inference' } }, (request, reply) => handleInference(endpoint, url, deps, request, reply));
  }
  // A route-level error handler: every failure on these routes (auth, body, routing,
  // upstream) answers in Anthropic's error shape, which its SDKs and Claude Code parse.
  const errorHandler = anthropicErrorHandler(deps.guardrails.logger);
  for (const [url, endpoint] of MESSAGES_ROUTES) {
    app.post(url, { config: { gatewayScope: 'inference' }, errorHandler }, (request, reply) => handleInference(endpoint, url, deps, request, reply));
  }
  registerModelsRoutes(app, { dispatcher: deps.routing.dispatcher });
  registerForwardedRoutes(app, { dispatcher: deps.routing.dispatcher });
}

function isMessages(endpoint: InferenceEndpoint): boolean {
  return endpoint === 'messages' || endpoint === 'messages.count_tokens';
}

async function handleInference(
  endpoint: InferenceEndpoint,
  pathname: string,
  deps: InferenceDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { routing: runtime } = deps;
  const context = request.gateway;
  reply.header(HEADER.cacheStatus, 'DISABLED');
  const requestTimeoutMs = parseRequestTimeout(headerValue(request.headers[HEADER.requestTimeout]));
  const forwardHeaders = parseForwardHeaders(headerValue(request.headers[HEADER.forwardHeaders]));
  const messages = isMessages(endpoint);
  const headers = messages ? messagesRoutingHeaders(request.headers) : request.headers;
  const selection = selectRoute(headers, context.state);
  context.configId = selection.configId;

  let body = request.body as Record<string, unknown>;
  let rawBody = request.rawBody;
  const promptId = selection.plan.settings.prompt_id;
  if (promptId !== undefined) {
    body = runPrompt(promptId, endpoint, context.state, body);
    rawBody = Buffer.from(JSON.stringify(body));
  }
  const invalid = validateRequestBody(endpoint, body);
  if (invalid !== undefined) throw invalid;
  context.model = body['model'] as string;

  const admission = await admit(deps, context, selection.plan, body);
  const clientAsksUsage = (body['stream_options'] as { include_usage?: unknown } | null | undefined)?.include_usage === true;
  // Every stream is accounted (tokens, cost, token limits), and streams report usage only
  // when asked: the gateway asks, and cuts what it added from the client's stream.
  const stripStreamUsage = body['stream'] === true && !clientAsksUsage && (endpoint === 'chat.completions' || endpoint === 'completions');
  if (stripStreamUsage) {
    body = { ...body, stream_options: { ...(body['stream_options'] as object | undefined), include_usage: true } };
    rawBody = Buffer.from(JSON.stringify(body));
  }
  if (admission !== undefined && admission.tokenWindows.length > 0) {
    const limiter = deps.rateLimiter as RateLimiter;
    // Charged once when the request is accounted (request-finish.ts): the provider's usage,
    // or an estimate for a stream the client left before usage arrived.
    context.chargeTokens = (tokens) => limiter.chargeTokens(admission, tokens);
  }

  const controller = new AbortController();
  // A client that goes away must not keep the provider busy (and billing).
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) {
      context.clientAborted = true;
      controller.abort();
    }
  });
  // Input guardrails run before the cache and routing: a deny never reaches a provider.
  const guards = guardrailsOf(selection.plan.settings, context.state);
  const guardOptions = guards.empty ? undefined : runOptionsOf(deps.guardrails);
  const hookContext = { endpoint, metadata: context.metadata, model: context.model };
  const guardSpan = guardOptions === undefined ? undefined : context.span?.startChild('aigateway.guardrails.input');
  const before = guardOptions === undefined ? undefined : await runInput(guards, { ...hookContext, requestBody: body }, guardOptions);
  guardSpan?.end({ 'aigateway.guardrail.verdict': before === undefined ? undefined : verdictOf(before, undefined) });
  logAsync(before, deps.guardrails.logger, context.traceId);
  if (before !== undefined) {
    context.guardrailVerdict = verdictOf(before, undefined);
    if (before.denied) {
      const denied = deniedBody('input', hookResultsOf(before, undefined));
      return reply.code(GUARDRAIL_DENIED_STATUS).header('content-type', 'application/json; charset=utf-8').send(messages ? anthropicDeniedBody(denied) : denied);
    }
    if (before.requestBody !== undefined) {
      body = before.requestBody;
      rawBody = Buffer.from(JSON.stringify(body));
    }
  }

  let cacheFlow: CacheFlow | undefined;
  const cacheRequest = deps.cache === undefined ? undefined : cacheRequestOf(selection.plan, selection.configId, context.state, endpoint, body, request.headers, context.metadata);
  if (deps.cache !== undefined && cacheRequest !== undefined) {
    const cacheSpan = context.span?.startChild('aigateway.cache.lookup');
    cacheFlow = { request: cacheRequest, lookup: await deps.cache.lookup(cacheRequest) };
    cacheSpan?.end({ 'aigateway.cache.status': cacheFlow.lookup.status });
    countLookup(deps.routing.metrics, cacheFlow.lookup, context, reply);
    const cached = replyFromCache(reply, cacheFlow.lookup, endpoint, body['stream'] === true, clientAsksUsage, context);
    if (cached !== undefined) return cached;
  }

  context.requestBytes = rawBody?.length ?? 0;
  // Native providers get the client's anthropic-version and -beta with the body.
  if (messages) body = withClientAnthropicHeaders(body, request.headers);
  const progress: WalkProgress = { retries: 0, firstDispatchAt: undefined, lastPath: undefined, lastTarget: undefined };
  const result = await walkPlan(
    selection.plan,
    {
      runtime,
      state: context.state,
      endpoint,
      body,
      rawBody,
      headers,
      metadata: context.metadata,
      pathname,
      configId: selection.configId,
      forwardHeaders,
      requestTimeoutMs,
      deadline: requestTimeoutMs === undefined ? Number.POSITIVE_INFINITY : runtime.now() + requestTimeoutMs,
      signal: controller.signal,
      span: context.span,
    },
    progress,
  ).finally(() => {
    context.retries = progress.retries;
    context.upstreamStartedAt = progress.firstDispatchAt;
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
  const outputGuards = guardrailsOf(result.target.node, context.state);
  const guarded = guardOptions !== undefined || !outputGuards.empty;
  const output = guarded ? outputGuardrails(outputGuards, before, { ...hookContext, requestBody: body }, deps.guardrails, context) : undefined;
  if (messages) {
    const reader = new MessagesStreamReader({ collectContent: output !== undefined });
    const native = result.target.adapter.nativeMessages?.accepts(result.requestBody) === true;
    const parsed = result.plain?.parsed as { usage?: unknown } | undefined;
    if (native && parsed !== undefined) reader.noteUsage(parsed.usage);
    const accounted = accountingContext(context, reader);
    const finishPlain = output?.finishPlain;
    const adapter = messagesRelayAdapter(result.target.adapter, result.requestBody, reader);
    return relayResponse(reply, {
      // The relay hands output checks the provider's own answer: they check (and the
      // client gets) the Anthropic-shaped one.
      finishPlain:
        finishPlain === undefined
          ? undefined
          : async (parsed) => {
              const answer = adapter.transformResponse === undefined ? parsed : adapter.transformResponse(endpoint, parsed, result.requestBody);
              const verdict = await finishPlain(answer);
              return verdict.status === GUARDRAIL_DENIED_STATUS ? { status: verdict.status, body: anthropicDeniedBody(verdict.body as Record<string, unknown>) } : verdict;
            },
      // Anthropic streams have no [DONE] to hold a tail on: output checks hold the stream.
      streamGuard: output === undefined ? undefined : messagesHold(output.hold, reader),
      upstream: result.response,
      target: { ...result.target, adapter },
      endpoint,
      requestBody: result.requestBody,
      plain: result.plain,
      streamIdleTimeoutMs: result.timeoutMs,
      context: accounted,
    });
  }
  return relayResponse(reply, {
    finishPlain: output?.finishPlain,
    streamGuard: output === undefined ? undefined : outputGuards.afterDenies ? output.hold : output.tail(endpoint),
    upstream: result.response,
    target: result.target,
    endpoint,
    requestBody: result.requestBody,
    plain: result.plain,
    streamIdleTimeoutMs: result.timeoutMs,
    stripStreamUsage,
    observer: deps.cache === undefined || cacheFlow === undefined ? undefined : cacheObserver(deps.cache, cacheFlow),
    context,
  });
}

function runPrompt(promptId: string, endpoint: InferenceEndpoint, state: GatewayState, body: unknown): Record<string, unknown> {
  if (endpoint !== 'chat.completions') {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', 'prompt_id works with /v1/chat/completions only.', { param: HEADER.config });
  }
  const prompt = state.prompts.get(promptId);
  if (prompt === undefined) {
    throw new GatewayError('AIGW_ERR_NOT_FOUND', `The config's prompt_id "${promptId}" names no prompt.`, { param: HEADER.config });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('AIGW_ERR_INVALID_BODY', 'request body must be a JSON object');
  }
  return applyPrompt(prompt, body as Record<string, unknown>);
}

/**
 * Output checks on a /v1/messages stream: the held bytes were read as they passed, the
 * assembled Message is checked; a denial is an Anthropic-shaped 446, a pass sends the
 * stream unchanged (no hook_results event: Anthropic streams have no place for one).
 */
function messagesHold(hold: { check(collected: Buffer, assembled?: unknown): Promise<{ status: number; body?: unknown }> }, reader: MessagesStreamReader): StreamGuard {
  return {
    mode: 'hold',
    async check(collected) {
      const verdict = await hold.check(collected, reader.result());
      if (verdict.body !== undefined) return { status: verdict.status, body: anthropicDeniedBody(verdict.body as Record<string, unknown>) };
      return { status: verdict.status };
    },
  };
}

/** The output side of guardrails for one answer: plain (246/446 + hook_results) and streams. */
function outputGuardrails(
  compiled: CompiledGuardrails,
  before: HooksOutcome | undefined,
  context: Omit<HookContext, 'responseBody'>,
  runtime: GuardrailRuntime,
  request: RequestContext,
) {
  const options = runOptionsOf(runtime);
  const check = async (answer: unknown) => {
    const after = compiled.after.length === 0 ? undefined : await runAfterHooks(compiled, { ...context, responseBody: answer }, options);
    logAsync(after, runtime.logger, request.traceId);
    request.guardrailVerdict = verdictOf(before, after);
    return { after, results: hookResultsOf(before, after) };
  };
  return {
    async finishPlain(parsed: unknown): Promise<{ status: number; body: unknown }> {
      const { after, results } = await check(parsed);
      if (after?.denied === true) return { status: GUARDRAIL_DENIED_STATUS, body: deniedBody('output', results) };
      const answer = (after?.responseBody ?? parsed) as Record<string, unknown>;
      const status = verdictOf(before, after) === 'fail' ? GUARDRAIL_FAILED_STATUS : 200;
      return { status, body: { ...answer, hook_results: results } };
    },
    hold: {
      mode: 'hold' as const,
      /** `assembled`: the answer when the caller assembled it (streams that are not OpenAI-shaped). */
      async check(collected: Buffer, assembled?: unknown): Promise<{ status: number; body?: unknown; event?: string }> {
        let answer = assembled;
        if (answer === undefined) {
          const assembler = new StreamAssembler(context.endpoint);
          assembler.push(collected);
          answer = assembler.result();
        }
        const { after, results } = await check(answer);
        if (after?.denied === true) return { status: GUARDRAIL_DENIED_STATUS, body: deniedBody('output', results) };
        const status = verdictOf(before, after) === 'fail' ? GUARDRAIL_FAILED_STATUS : 200;
        return { status, event: `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [], hook_results: results })}\n\n` };
      },
    },
    tail: (endpoint: InferenceEndpoint) => ({
      mode: 'tail' as const,
      tail: () => new GuardedStreamTail(endpoint, async (answer) => (await check(answer)).results),
    }),
  };
}

async function admit(deps: InferenceDeps, context: RequestContext, plan: PlanNode, body: Record<string, unknown>): Promise<Admission | undefined> {
  if (deps.rateLimiter === undefined) return undefined;
  const fromState = context.state.document.rateLimitPolicies;
  const fromApi = deps.dynamicPolicies();
  if (fromState.length === 0 && fromApi.length === 0) return undefined;
  const facts = {
    workspace_id: context.apiKey?.workspace,
    api_key: context.apiKey?.id,
    provider: providerNamed(plan, context.state),
    model: typeof body['model'] === 'string' ? body['model'] : undefined,
    config: context.configId,
    metadata: context.metadata,
  };
  return deps.rateLimiter.admit(fromApi.length === 0 ? fromState : [...fromState, ...fromApi], facts);
}

/** The provider a request names before routing: a single target's provider; none for strategies. */
function providerNamed(plan: PlanNode, state: GatewayState): string | undefined {
  if (plan.mode !== undefined) return undefined;
  const { provider, virtual_key: virtualKey } = plan.settings;
  if (virtualKey !== undefined) return state.providersByVirtualKey.get(virtualKey)?.provider;
  if (provider?.startsWith('@')) return state.providersBySlug.get(provider.slice(1))?.provider;
  return provider;
}

function parseRequestTimeout(value: string | undefined): number | undefined {
  return integerHeader(value, HEADER.requestTimeout, 1, MAX_REQUEST_TIMEOUT_MS);
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
