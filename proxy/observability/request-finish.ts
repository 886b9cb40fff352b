import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { costOfRequest, estimateUsage } from '../accounting/request-cost.ts';
import type { RequestContext } from '../request-context.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { observeCost, observeRequest, OPERATIONS } from './observe-request.ts';
import { logRequest } from './log-line.ts';
import type { RequestRecord, RequestRecordSink } from './request-record.ts';
import type { RequestTracer } from './tracing.ts';

// Every request is accounted exactly once — one log line, one log-store record, one set of
// metric observations, token limits charged, the span ended — at one point that runs
// whether the response finished or the client closed first: the response's 'close' event
// (Node emits it in both cases; Fastify's onResponse does not run when the client leaves,
// e.g. an SDK that stops reading at `data: [DONE]`), behind a once-guard.

export interface FinishDeps {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly requestSink: RequestRecordSink | undefined;
  readonly tracer: RequestTracer | undefined;
}

const UNRECORDED = new Set(['/metrics', '/health', '/ready']);

/** Called once the context exists (first thing in onRequest). */
export function armRequestFinish(request: FastifyRequest, reply: FastifyReply, deps: FinishDeps): void {
  const context = request.gateway;
  const route = request.routeOptions.url ?? 'unmatched';
  if (deps.tracer !== undefined && !UNRECORDED.has(route)) {
    context.span = deps.tracer.startRequest(request.method, route, request.headers, context.traceId);
  }
  reply.raw.once('close', () => finishRequest(request, reply, deps));
}

export function finishRequest(request: FastifyRequest, reply: FastifyReply, deps: FinishDeps): void {
  const context = request.gateway;
  if (context === null || context === undefined || context.finished) return;
  context.finished = true;
  const route = request.routeOptions.url ?? 'unmatched';
  if (UNRECORDED.has(route)) return;
  // The client left before the answer was whole (a stream that had relayed its end counts as whole).
  const leftEarly = !reply.raw.writableFinished && !(reply.raw.headersSent && context.upstreamDoneAt !== undefined);
  if (leftEarly) context.clientAborted = true;
  const status = context.clientAborted ? 499 : reply.statusCode;
  if (context.clientAborted) estimateUsage(context);
  settleTokens(context);
  context.costUsd = costOfRequest(context);
  observeRequest(deps.metrics, context, route, status);
  observeCost(deps.metrics, context);
  const record = recordOf(context, request.method, route, status);
  logRequest(deps.logger, record, context.clientAborted);
  if (deps.requestSink !== undefined && route.startsWith('/v1/')) deps.requestSink(record);
  context.span?.end({
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

function recordOf(context: RequestContext, method: string, route: string, status: number): RequestRecord {
  return {
    id: randomUUID(),
    traceId: context.traceId,
    startedAt: context.startedAtMs,
    method,
    route,
    status,
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
    cachedTokens: context.usage?.cachedPrompt,
    reasoningTokens: context.usage?.reasoning,
    usageEstimated: context.usageEstimated || undefined,
    costUsd: context.costUsd,
    otelTraceId: context.span?.traceId,
    cacheStatus: context.cacheStatus,
    retries: context.retries,
    guardrailVerdict: context.guardrailVerdict,
    errorCode: context.errorCode,
  };
}
