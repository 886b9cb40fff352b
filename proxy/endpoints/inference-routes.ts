import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { validateRequestBody } from '../openai/body-validation.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { applyPrompt } from '../prompts/apply-prompt.ts';
import type { RateLimitPolicy } from '../ratelimit/policy-schema.ts';
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';
import type { RequestContext } from '../request-context.ts';
import type { UpstreamAnswer } from '../upstream/call-target.ts';
import { walkPlan, type RoutingRuntime, type WalkProgress, type WalkResult } from '../routing/execute-plan.ts';
import type { PlanNode } from '../config/routing-plan.ts';
import { selectRoute, type RouteSelection } from '../routing/select-route.ts';
import { relayResponse } from './relay-response.ts';
import { anthropicErrorHandler } from '../ingress/anthropic-messages/messages-request.ts';
import { ingressFor } from '../ingress/client-protocols.ts';
import type { IngressTranslator } from '../ingress/ingress-translator.ts';
import { callOptionsOf, type CallOptions } from './call-options.ts';
import { registerModelsRoutes } from './models-routes.ts';
import { registerForwardedRoutes } from './openai-forwarded-routes.ts';
import type { ResponseCache } from '../cache/response-cache.ts';
import type { HookContext } from '../guardrails/run-hooks.ts';
import {
  deniedBody,
  GUARDRAIL_DENIED_STATUS,
  attachedGuardrailsOf,
  guardrailsOf,
  hookResultsOf,
  mergeGuardrails,
  logAsync,
  runInput,
  runOptionsOf,
  verdictOf,
  type CompiledGuardrails,
  type GuardrailRuntime,
  type HooksOutcome,
} from './guardrail-flow.ts';
import { outputGuardrails } from './output-guardrails.ts';
import { rateLimitAdmission, lazyResolution, tokenEstimate } from './policy-admission.ts';
import { budgetAdmission, markCacheHitUncharged, type BudgetRuntime } from '../budgets/budget-admission.ts';
import { registerBudgetAnalytics } from '../budgets/budget-analytics.ts';
import { reachableTargets } from '../routing/reachable-targets.ts';
import { cacheObserver, cacheRequestOf, countLookup, replyFromCache, type CacheFlow } from './response-caching.ts';

// POST /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses and Anthropic's
// /v1/messages: one handler, parameterised by endpoint, composed of the stages below in the
// order they run.

export const INFERENCE_ROUTES: ReadonlyArray<readonly [string, InferenceEndpoint]> = [
  ['/v1/chat/completions', 'chat.completions'],
  ['/v1/completions', 'completions'],
  ['/v1/embeddings', 'embeddings'],
  ['/v1/responses', 'responses'],
];

/** Anthropic's Messages API: same pipeline, Anthropic-shaped bodies and errors. */
export const MESSAGES_ROUTES: ReadonlyArray<readonly [string, InferenceEndpoint]> = [
  ['/v1/messages', 'messages'],
  ['/v1/messages/count_tokens', 'messages.count_tokens'],
];

export interface InferenceDeps extends BudgetRuntime {
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

export function registerInferenceRoutes(app: FastifyInstance, deps: InferenceDeps): void {
  for (const [url, endpoint] of INFERENCE_ROUTES) {
    app.post(url, { config: { gatewayScope: 'inference' }}, (request, reply) => handleInference(endpoint, url, deps, request, reply));
  }
  // A route-level error handler: every failure on these routes (auth, body, routing,
  // upstream) answers in Anthropic's error shape, which its SDKs and Claude Code parse.
  const errorHandler = anthropicErrorHandler(deps.guardrails.logger);
  for (const [url, endpoint] of MESSAGES_ROUTES) {
    app.post(url, { config: { gatewayScope: 'inference' }, errorHandler}, (request, reply) => handleInference(endpoint, url, deps, request, reply));
  }
  // Any other /v1/messages/… is a 404 in the same shape, once the key is checked (a route,
  // not the not-found handler, so default deny and the error handler apply as above).
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/v1/messages/*',
    config: { gatewayScope: 'inference' },
    errorHandler,
    handler: (request) => {
      throw new GatewayError('AIGW_ERR_NOT_FOUND', `Unknown route: ${request.method} ${request.url.split('?')[0]}`);
    },
  });
  registerModelsRoutes(app, { dispatcher: deps.routing.dispatcher });
  registerBudgetAnalytics(app, deps);
  registerForwardedRoutes(app, { dispatcher: deps.routing.dispatcher, policies: deps, guardrails: deps.guardrails });
}

/** The body's `model`, read before the body is validated (routing by model comes first). */
function modelOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['model'] : undefined;
}

/**
 * The request body on its way to the provider: the object every stage reads, and whether
 * a stage changed it. Until one does, the client's own bytes are sent.
 */
interface OutgoingBody {
  readonly value: Record<string, unknown>;
  readonly changed: boolean;
  /** The change is only this member (`"name":value`) added to the client's body. */
  readonly added?: string;
}

/**
 * The bytes to send: the client's; theirs with the one member a stage added, spliced in
 * before the closing brace (a large body is not serialised again to add a few bytes);
 * or the body serialised once when a stage changed more.
 */
function bytesOf(body: OutgoingBody, received: Buffer | undefined): Buffer | undefined {
  if (!body.changed) return received;
  if (body.added !== undefined && received !== undefined) {
    const spliced = withMember(received, body.added);
    if (spliced !== undefined) return spliced;
  }
  return Buffer.from(JSON.stringify(body.value));
}

/** `bytes` (a JSON object, already parsed) with `member` as its last member; undefined when it does not end in `}`. */
export function withMember(bytes: Buffer, member: string): Buffer | undefined {
  const close = lastNonSpace(bytes, bytes.length - 1);
  if (close === -1 || bytes[close] !== 0x7d) return undefined;
  const before = lastNonSpace(bytes, close - 1);
  if (before === -1) return undefined;
  const text = bytes[before] === 0x7b ? member : `,${member}`;
  const out = Buffer.allocUnsafe(bytes.length + Buffer.byteLength(text));
  bytes.copy(out, 0, 0, close);
  const at = close + out.write(text, close);
  bytes.copy(out, at, close);
  return out;
}

/** The index of the last byte at or before `from` that is not JSON whitespace, or -1. */
function lastNonSpace(bytes: Buffer, from: number): number {
  let at = from;
  while (at >= 0 && (bytes[at] === 0x20 || bytes[at] === 0x0a || bytes[at] === 0x0d || bytes[at] === 0x09)) at--;
  return at;
}

async function handleInference(
  endpoint: InferenceEndpoint,
  pathname: string,
  deps: InferenceDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const context = request.gateway;
  // The client protocol's translator, once for the request: routing headers, the body
  // forwarded, the answer turned back, usage read.
  const ingress = ingressFor(endpoint);
  reply.header(HEADER.cacheStatus, 'DISABLED');
  const options = callOptionsOf(request.headers);
  const headers = ingress.routingHeaders(request.headers);
  const selection = selectRoute(headers, context.state, { apiKey: context.apiKey, model: modelOf(request.body) });
  context.configId = selection.configId;

  let body = promptedBody(endpoint, selection.plan, context.state, request.body);
  const invalid = validateRequestBody(endpoint, body.value);
  if (invalid !== undefined) throw invalid;
  context.model = body.value['model'] as string;
  context.modelRequested = context.model;

  // Policies match what the request resolves to: every target it may reach (strategies,
  // saved providers, override_params.model), not the provider it names.
  const prompted = body;
  const resolved = lazyResolution(() => reachableTargets(selection.plan, context.state, { body: prompted.value, metadata: context.metadata, pathname }), context);
  const limited = rateLimitAdmission(deps, context, resolved, () =>
    tokenEstimate(prompted.value, prompted.changed ? JSON.stringify(prompted.value).length : (request.rawBody?.length ?? 0), generates(endpoint)),
  );
  if (limited !== undefined) await limited;
  // Pure, and before the reservation: a config error here never leaves one in flight.
  const attached = attachedGuardrailsOf(context.state, resolved);
  const inputGuards = mergeGuardrails(guardrailsOf(selection.plan.settings, context.state), attached);
  // Budgets: the worst case reserved on every matching usage-limit policy (docs/budgets.md).
  const budgeted = budgetAdmission(deps, context, reply, resolved, () => ({
    body: prompted.value,
    bodyBytes: prompted.changed ? JSON.stringify(prompted.value).length : (request.rawBody?.length ?? 0),
    generates: generates(endpoint),
  }));
  // Input guardrails may call out and a cache hit must know the reservation: they wait for it.
  // Without either (no cache wired, or none in the request's config: lookupCache does nothing),
  // the reservation travels while the request is prepared and its target resolved, and the
  // leaf awaits it before any dispatch (routing/execute-plan.ts).
  const caches = deps.cache !== undefined && selection.plan.settings.cache !== undefined;
  const gate = budgeted !== undefined && inputGuards.empty && !caches ? budgeted : undefined;
  if (gate !== undefined) gate.catch(ignoreUntilAwaited);
  else if (budgeted !== undefined) await budgeted;
  const usage = withStreamUsage(ingress, body);
  body = usage.body;
  const signal = abortWhenClientLeaves(reply, context);

  // No guardrails (the common case): no hook context, no promise.
  const requestedModel = context.model;
  const hookContext = inputGuards.empty ? undefined : { endpoint, metadata: context.metadata, model: requestedModel };
  const before = hookContext === undefined ? undefined : await checkInput(inputGuards, { ...hookContext, requestBody: body.value }, deps.guardrails, context);
  if (before?.denied === true) return replyInputDenied(reply, before, ingress);
  if (before?.requestBody !== undefined) body = { value: before.requestBody, changed: true };

  // No response cache wired, or none in the request's config: no lookup call and no promise.
  const cache = !caches ? NO_CACHE_FLOW : await lookupCache(deps, selection, endpoint, ingress, body.value, usage.clientAsks, request, reply);
  if (cache.hit !== undefined) return cache.hit;

  const rawBody = bytesOf(body, request.rawBody);
  context.requestBytes = rawBody?.length ?? 0;
  // What travels beside the body (never serialised): Messages' client headers and its translator.
  const outgoing = ingress.forwardedBody(body.value, request.headers);
  // The walk is awaited here, not in a function of its own: one async frame less a request.
  const progress: WalkProgress = { retries: 0, firstDispatchAt: undefined, lastPath: undefined, lastTarget: undefined, attempts: [] };
  let walked: WalkResult;
  try {
    walked = await walkToTarget(deps.routing, selection, { endpoint, pathname, body: outgoing, rawBody, headers, options, signal, gate }, context, progress);
  } catch (error) {
    return walkFailed(error, gate, progress, context, reply);
  }
  if (walked.kind !== 'response') return walkFailed(walkError(walked), gate, progress, context, reply);
  recordWalk(progress, context, reply);
  const result = walked;
  // Settled already when a leaf dispatched; the walk's own failure path awaits it first.
  if (gate !== undefined) await gate;
  const model = result.requestBody['model'];
  if (typeof model === 'string') context.model = model;

  const outputGuards = mergeGuardrails(guardrailsOf(result.target.node, context.state), attached);
  const guarded = !inputGuards.empty || !outputGuards.empty;
  const output = guarded
    ? outputGuardrails(outputGuards, before, { endpoint, metadata: context.metadata, model: requestedModel, requestBody: outgoing }, deps.guardrails, context, ingress)
    : undefined;
  const observer = deps.cache === undefined || cache.flow === undefined ? undefined : cacheObserver(deps.cache, cache.flow, ingress, { provider: result.target.provider, model: context.model });
  // The answer as the client's protocol has it (the OpenAI-shaped ones: the provider's adapter as is).
  const adapter = ingress.answerAdapter(result.target, result.requestBody);
  return relayResponse(reply, {
    finishPlain: output?.finishPlain,
    // A stream with no place for hook_results (Anthropic's) is held for output checks.
    streamGuard: output === undefined ? undefined : outputGuards.afterDenies || !ingress.streamResultsTail ? output.hold : output.tail(endpoint),
    upstream: result.response,
    target: adapter === result.target.adapter ? result.target : { ...result.target, adapter },
    endpoint,
    requestBody: result.requestBody,
    plain: result.plain,
    streamIdleTimeoutMs: result.timeoutMs,
    stripStreamUsage: usage.strip,
    ingress,
    observer,
    context,
  });
}

/** The client's body, or the config's prompt rendered into it (chat completions only). */
function promptedBody(endpoint: InferenceEndpoint, plan: PlanNode, state: GatewayState, received: unknown): OutgoingBody {
  const promptId = plan.settings.prompt_id;
  if (promptId === undefined) return { value: received as Record<string, unknown>, changed: false };
  if (endpoint !== 'chat.completions') {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', 'prompt_id works with /v1/chat/completions only.', { param: HEADER.config });
  }
  const prompt = state.prompts.get(promptId);
  if (prompt === undefined) {
    throw new GatewayError('AIGW_ERR_NOT_FOUND', `The config's prompt_id "${promptId}" names no prompt.`, { param: HEADER.config });
  }
  if (typeof received !== 'object' || received === null || Array.isArray(received)) {
    throw new GatewayError('AIGW_ERR_INVALID_BODY', 'request body must be a JSON object');
  }
  return { value: applyPrompt(prompt, received as Record<string, unknown>), changed: true };
}

/** Endpoints whose answers are generated tokens (embeddings and token counts are not). */
function generates(endpoint: InferenceEndpoint): boolean {
  return endpoint !== 'embeddings' && endpoint !== 'messages.count_tokens';
}

const STREAM_USAGE_MEMBER = `"stream_options":${JSON.stringify({ include_usage: true })}`;

/**
 * Every stream is accounted (tokens, cost, token limits), and streams report usage only
 * when asked: the gateway asks, and the relay cuts what it added from the client's stream.
 */
function withStreamUsage(ingress: IngressTranslator, body: OutgoingBody): { body: OutgoingBody; clientAsks: boolean; strip: boolean } {
  const streamOptions = body.value['stream_options'] as { include_usage?: unknown } | null | undefined;
  const clientAsks = streamOptions?.include_usage === true;
  const strip = body.value['stream'] === true && !clientAsks && ingress.asksStreamUsage;
  if (!strip) return { body, clientAsks, strip };
  const value = { ...body.value, stream_options: { ...(streamOptions ?? undefined), include_usage: true } };
  // Not sent at all, on the client's own body: the member is added to its bytes as they are.
  const added = !body.changed && !Object.hasOwn(body.value, 'stream_options') ? STREAM_USAGE_MEMBER : undefined;
  return { body: { value, changed: true, added }, clientAsks, strip };
}

/** A client that goes away must not keep the provider busy (and billing). */
function abortWhenClientLeaves(reply: FastifyReply, context: RequestContext): AbortSignal {
  const controller = new AbortController();
  // `on`, not `once`: 'close' comes once, and `once` wraps the listener in another closure.
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) {
      context.clientAborted = true;
      controller.abort();
    }
  });
  return controller.signal;
}

/** Input guardrails run before the cache and routing, so a deny never reaches a provider. */
async function checkInput(
  guards: CompiledGuardrails,
  hookContext: HookContext,
  runtime: GuardrailRuntime,
  context: RequestContext,
): Promise<HooksOutcome | undefined> {
  if (guards.empty) return undefined;
  const span = context.span?.startChild('aigateway.guardrails.input');
  const before = await runInput(guards, hookContext, runOptionsOf(runtime));
  span?.end({ 'aigateway.guardrail.verdict': before === undefined ? undefined : verdictOf(before, undefined) });
  logAsync(before, runtime.logger, context.traceId);
  if (before !== undefined) context.guardrailVerdict = verdictOf(before, undefined);
  return before;
}

function replyInputDenied(reply: FastifyReply, before: HooksOutcome, ingress: IngressTranslator): FastifyReply {
  const denied = deniedBody('input', hookResultsOf(before, undefined));
  return reply
    .code(GUARDRAIL_DENIED_STATUS)
    .header('content-type', 'application/json; charset=utf-8')
    .send(ingress.deniedBody(denied));
}

const NO_CACHE_FLOW: { hit?: FastifyReply; flow?: CacheFlow } = Object.freeze({});

/** A cached answer (`hit`, already sent), or the flow that saves the provider's answer. */
async function lookupCache(
  deps: InferenceDeps,
  selection: RouteSelection,
  endpoint: InferenceEndpoint,
  ingress: IngressTranslator,
  body: Record<string, unknown>,
  clientAsksUsage: boolean,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<{ hit?: FastifyReply; flow?: CacheFlow }> {
  const { cache } = deps;
  if (cache === undefined) return {};
  const context = request.gateway;
  const cacheRequest = cacheRequestOf(selection.plan, selection.configId, context, endpoint, body, request.headers, ingress);
  if (cacheRequest === undefined) return {};
  const span = context.span?.startChild('aigateway.cache.lookup');
  const flow: CacheFlow = { request: cacheRequest, lookup: await cache.lookup(cacheRequest) };
  span?.end({ 'aigateway.cache.status': flow.lookup.status });
  countLookup(deps.routing.metrics, flow.lookup, context, reply);
  if (context.settleBudget !== undefined && flow.lookup.status.endsWith('HIT')) markCacheHitUncharged(reply);
  const hit = replyFromCache(reply, flow.lookup, endpoint, body['stream'] === true, clientAsksUsage, context, ingress);
  return hit === undefined ? { flow } : { hit };
}

interface WalkInput {
  readonly endpoint: InferenceEndpoint;
  readonly pathname: string;
  readonly body: Record<string, unknown>;
  readonly rawBody: Buffer | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly options: CallOptions;
  readonly signal: AbortSignal;
  /** The budget reservation still in flight (no input guardrails, no cache). */
  readonly gate: Promise<void> | undefined;
}

/** A refusal that settles before the walk reaches a leaf is not unhandled; the original promise is awaited. */
function ignoreUntilAwaited(): undefined {
  return undefined;
}

/** Walks the plan (strategies, retries, breakers) to a provider's answer; the caller awaits it. */
function walkToTarget(runtime: RoutingRuntime, selection: RouteSelection, input: WalkInput, context: RequestContext, progress: WalkProgress): Promise<WalkResult> {
  const { requestTimeoutMs, forwardHeaders } = input.options;
  return walkPlan(
    selection.plan,
    {
      runtime,
      state: context.state,
      endpoint: input.endpoint,
      body: input.body,
      rawBody: input.rawBody,
      headers: input.headers,
      metadata: context.metadata,
      pathname: input.pathname,
      configId: selection.configId,
      forwardHeaders,
      requestTimeoutMs,
      deadline: requestTimeoutMs === undefined ? Number.POSITIVE_INFINITY : runtime.now() + requestTimeoutMs,
      signal: input.signal,
      span: context.span,
      gate: input.gate,
    },
    progress,
  );
}

/** No target is a 503, a failed one its error. */
function walkError(result: Exclude<WalkResult, UpstreamAnswer>): unknown {
  if (result.kind === 'error') return result.error;
  const which = result.labels.length > 0 ? `: ${[...new Set(result.labels)].join(', ')}` : '';
  return new GatewayError('AIGW_ERR_TARGETS_UNAVAILABLE', `No target available — ${result.reason}${which}.`);
}

/** Rejects with the walk's error, or with the reservation's refusal. */
async function walkFailed(error: unknown, gate: Promise<void> | undefined, progress: WalkProgress, context: RequestContext, reply: FastifyReply): Promise<never> {
  // The walk may end before any leaf awaited the reservation (every circuit open, a config
  // error): its refusal wins, and its outcome is known before any answer is sent.
  const refusal = gate === undefined ? undefined : await refusalOf(gate);
  if (refusal !== undefined) throw refusal; // a refused request reports no walk, as when the reservation was awaited first
  recordWalk(progress, context, reply);
  throw error;
}

/** The reservation's refusal, or undefined once it is admitted. */
function refusalOf(gate: Promise<void>): Promise<unknown> {
  return gate.then(
    () => undefined,
    (error: unknown) => error ?? new Error('budget reservation rejected'),
  );
}

/** What the walk did, for the log line and the client's gateway headers, whatever its outcome. */
function recordWalk(progress: WalkProgress, context: RequestContext, reply: FastifyReply): void {
  context.retries = progress.retries;
  context.upstreamStartedAt = progress.firstDispatchAt;
  context.targetPath = progress.lastPath;
  context.attempts = progress.attempts;
  context.provider = progress.lastTarget?.provider;
  if (progress.lastTarget !== undefined) reply.header(HEADER.provider, progress.lastTarget.provider);
  if (progress.lastPath !== undefined) reply.header(HEADER.lastUsedOptionIndex, progress.lastPath);
  reply.header(HEADER.retryAttemptCount, String(progress.retries));
}
