import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { costOfRequest, estimateUsage } from '../accounting/request-cost.ts';
import { saneUsage } from '../accounting/token-count.ts';
import { settleBudgetOf } from '../budgets/budget-settlement.ts';
import type { RequestContext } from '../request-context.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { observeRequest, OPERATIONS } from './observe-request.ts';
import { logRequest } from './log-line.ts';
import { randomRecordId } from './record-id.ts';
import type { RequestRecord, RequestRecordSink } from './request-record.ts';
import { exchangeOf } from './request-exchange.ts';
import type { RequestTracer } from './tracing.ts';

// Every request is accounted exactly once — one log line, one log-store record, one set of
// metric observations, token limits charged, the span ended — at one point that runs
// whether the response finished or the client closed first: the response's 'close' event
// (Node emits it in both cases; Fastify's onResponse does not run when the client leaves,
// e.g. an SDK that stops reading at `data: [DONE]`), behind a once-guard.
//
// Nothing here may end the process: this runs in an event listener, where a throw is
// uncaught. Each stage is contained on its own (a failed metric does not cost the log
// record): the throw is logged and counted on aigateway_internal_errors_total{stage}.
// A try block costs nothing until something throws.

export interface FinishDeps {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly requestSink: RequestRecordSink | undefined;
  readonly tracer: RequestTracer | undefined;
}

const UNRECORDED = new Set(['/metrics', '/health', '/ready']);
// Reading the request log and the configuration does not write to the log: a console polling
// them all day would otherwise fill the store with its own reads (docs/console.md).
const UNLOGGED_READS = new Set(['/v1/logs', '/v1/logs/:id', '/v1/logs/:id/exchange', '/v1/analytics/summary', '/v1/configuration']);

/**
 * Called once the context exists (first thing in onRequest). `released` runs after the
 * accounting, on the same 'close' event: the server's in-flight slots are given back there
 * instead of on listeners of their own (one listener and one closure per request, not three).
 */
export function armRequestFinish(request: FastifyRequest, reply: FastifyReply, deps: FinishDeps, released?: (request: FastifyRequest) => void): void {
  const context = request.gateway;
  const route = request.routeOptions.url ?? 'unmatched';
  if (deps.tracer !== undefined && !UNRECORDED.has(route)) {
    try {
      context.span = deps.tracer.startRequest(request.method, route, request.headers, context.traceId);
    } catch (error) {
      containFailure(deps, 'span', error);
    }
  }
  // Node emits 'close' once per response: `on`, not `once` (no wrapper per request). The
  // listener is one function per server, not a closure per request: the response carries its
  // request and reply.
  const raw = reply.raw as typeof reply.raw & Armed;
  raw[ARMED_REQUEST] = request;
  raw[ARMED_REPLY] = reply;
  raw.on('close', closeListener(deps, released));
}

const ARMED_REQUEST = Symbol('aigateway.finish.request');
const ARMED_REPLY = Symbol('aigateway.finish.reply');

interface Armed {
  [ARMED_REQUEST]?: FastifyRequest;
  [ARMED_REPLY]?: FastifyReply;
}

type Released = ((request: FastifyRequest) => void) | undefined;
const listeners = new WeakMap<FinishDeps, { readonly released: Released; readonly listener: (this: Armed) => void }>();

function closeListener(deps: FinishDeps, released: Released): (this: Armed) => void {
  const kept = listeners.get(deps);
  if (kept !== undefined && kept.released === released) return kept.listener;
  const listener = function (this: Armed): void {
    const request = this[ARMED_REQUEST];
    const reply = this[ARMED_REPLY];
    if (request === undefined || reply === undefined) return;
    try {
      finishRequest(request, reply, deps);
    } catch (error) {
      containFailure(deps, 'finish', error);
    }
    released?.(request);
  };
  if (kept === undefined) listeners.set(deps, { released, listener });
  return listener;
}

/** Where in accounting a throw was contained: the label of aigateway_internal_errors_total. */
export type FinishStage = 'finish' | 'usage' | 'tokens' | 'cost' | 'budget' | 'metrics' | 'log' | 'log_store' | 'span';

/** A throw in accounting: logged and counted, never rethrown (the answer is already out). */
export function containFailure(deps: Pick<FinishDeps, 'logger' | 'metrics'>, stage: FinishStage, error: unknown): void {
  try {
    deps.metrics.internalErrors.inc({ stage });
    const message = error instanceof Error ? error.message : String(error);
    deps.logger.error({ stage, err: { message: message.slice(0, 300) } }, 'request accounting failed at one stage; the others went on');
  } catch {
    // Nothing is left to tell it to.
  }
}

// The last recorded exchange stays reachable until the next one is recorded. The idle release's
// full collection (bin/start-up-memory.ts) runs with no request in flight: the hidden classes of
// a request's objects would die with them, and V8 deoptimises every function whose optimised
// code embeds one (184 at once, measured), so the first thousands of requests after a quiet
// spell cost 1.5–2× the CPU. One small exchange kept alive keeps most of those classes
// (71 deoptimised; docs/performance.md). A large body is never kept: it could not be released.
const KEPT_EXCHANGE_MAX_BYTES = 256 * 1024;
const keptExchange: { request: FastifyRequest | undefined; reply: FastifyReply | undefined } = { request: undefined, reply: undefined };

/** The exchange finishRequest keeps reachable (for tests). */
export function keptExchangeRequest(): FastifyRequest | undefined {
  return keptExchange.request;
}

/** A request with a small body replaces the kept one; others (large, or without a body) leave it. */
function keepExchange(request: FastifyRequest, reply: FastifyReply): void {
  const length = request.headers?.['content-length']; // never throws: this runs in a listener
  if (length === undefined || !(Number(length) <= KEPT_EXCHANGE_MAX_BYTES)) return;
  keptExchange.request = request;
  keptExchange.reply = reply;
}

export function finishRequest(request: FastifyRequest, reply: FastifyReply, deps: FinishDeps): void {
  const context = request.gateway;
  if (context === null || context === undefined || context.finished) return;
  context.finished = true;
  const route = request.routeOptions.url ?? 'unmatched';
  if (UNRECORDED.has(route)) return;
  keepExchange(request, reply);
  // The client left before the answer was whole (a stream that had relayed its end counts as whole).
  const leftEarly = !reply.raw.writableFinished && !(reply.raw.headersSent && context.upstreamDoneAt !== undefined);
  if (leftEarly) context.clientAborted = true;
  const status = context.clientAborted ? 499 : reply.statusCode;
  try {
    if (context.clientAborted) estimateUsage(context);
    // The one gate: whatever route set the usage, every count is checked before limits,
    // cost, metrics, the log and the span read it (the readers checked the provider's fields).
    if (context.usage !== undefined) context.usage = saneUsage(context.usage);
  } catch (error) {
    context.usage = undefined;
    containFailure(deps, 'usage', error);
  }
  try {
    settleTokens(context);
  } catch (error) {
    containFailure(deps, 'tokens', error);
  }
  try {
    context.costUsd = costOfRequest(context);
  } catch (error) {
    context.costUsd = undefined;
    containFailure(deps, 'cost', error);
  }
  // Only a request that reserved budget settles: nothing of proxy/budgets/ runs otherwise.
  if (context.settleBudget !== undefined) {
    try {
      settleBudgetOf(context);
    } catch (error) {
      containFailure(deps, 'budget', error);
    }
  }
  // One clock reading (and one elapsed time) for the metrics and the record.
  const now = process.hrtime.bigint();
  const elapsedNs = Number(now - context.startedAt);
  try {
    observeRequest(deps.metrics, context, route, status, now, elapsedNs);
  } catch (error) {
    containFailure(deps, 'metrics', error);
  }
  const sink = deps.requestSink !== undefined && route.startsWith('/v1/') && !UNLOGGED_READS.has(route) ? deps.requestSink : undefined;
  let record: RequestRecord | undefined;
  try {
    // Neither a store nor a log line to write: no record.
    if (sink !== undefined || deps.logger.isLevelEnabled('info')) {
      record = recordOf(context, request.method, route, status, elapsedNs, sink !== undefined);
      logRequest(deps.logger, record, context.clientAborted);
    }
  } catch (error) {
    containFailure(deps, 'log', error);
  }
  try {
    if (record !== undefined && sink !== undefined) sink(record);
  } catch (error) {
    containFailure(deps, 'log_store', error);
  }
  endSpan(deps, context, route, status);
}

function endSpan(deps: FinishDeps, context: RequestContext, route: string, status: number): void {
  if (context.span === undefined) return;
  try {
    context.span.end({
      status,
      route,
      operation: OPERATIONS[route],
      provider: context.provider,
      requestModel: context.model,
      responseModel: context.responseModel,
      inputTokens: context.usage?.prompt,
      outputTokens: context.usage?.completion,
      ttftMs: context.ttftMs,
      costUsd: context.costUsd,
      cacheStatus: context.cacheStatus,
      errorCode: context.errorCode,
      clientAborted: context.clientAborted,
      retries: context.retries,
    });
  } catch (error) {
    containFailure(deps, 'span', error);
  }
}

/** Token limits are settled here, once, to what the provider reported (or the estimate, or 0). */
function settleTokens(context: RequestContext): void {
  const charge = context.chargeTokens;
  if (charge === undefined) return;
  context.chargeTokens = undefined;
  // Always called: it settles the tokens reserved on admission (0 without usage refunds them).
  const usage = context.usage;
  const total = usage === undefined ? 0 : (usage.total ?? (usage.prompt ?? 0) + (usage.completion ?? 0));
  charge(total > 0 ? total : 0);
}

function recordOf(context: RequestContext, method: string, route: string, status: number, elapsedNs: number, stored: boolean): RequestRecord {
  const usage = context.usage;
  return {
    // Only a store reads the id (the log line does not).
    id: stored ? randomRecordId() : '',
    traceId: context.traceId,
    startedAt: context.startedAtMs,
    method,
    route,
    status,
    latencyMs: elapsedNs / 1e6,
    ttftMs: context.ttftMs,
    apiKeyId: context.apiKey?.id,
    workspace: context.apiKey?.workspace,
    configId: context.configId,
    targetPath: context.targetPath,
    provider: context.provider ?? context.cacheProvider,
    model: context.model,
    modelRequested: context.modelRequested,
    attempts: context.attempts,
    metadata: context.metadata,
    promptTokens: usage?.prompt,
    completionTokens: usage?.completion,
    totalTokens: usage?.total,
    cachedTokens: usage?.cachedPrompt,
    reasoningTokens: usage?.reasoning,
    usageEstimated: context.usageEstimated || undefined,
    costUsd: context.costUsd,
    otelTraceId: context.span?.traceId,
    cacheStatus: context.cacheStatus,
    retries: context.retries,
    guardrailVerdict: context.guardrailVerdict,
    errorCode: context.errorCode,
    exchange: exchangeOf(context),
  };
}
