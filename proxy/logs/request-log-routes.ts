import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import type { RequestRecord } from '../observability/request-record.ts';
import type { GatewayHost } from '../gateway-host.ts';
import { parseLogListQuery, parseSummaryQuery } from './log-query-params.ts';
import {
  RequestLogCursorError,
  type AnalyticsSummary,
  type LogPage,
  type RequestLogStore,
  type SummaryGroupBy,
  type SummaryStats,
} from './request-log-store.ts';

// GET /v1/logs, GET /v1/logs/{id}, GET /v1/analytics/summary — all need the admin scope.
// A record names the API key by id only; keys, headers and bodies are never stored.
// Workspaces are a tenancy boundary: an admin key reads its own workspace's records (and
// costs); only the org_admin scope reads every workspace. Another workspace's record
// answers 404, and a `workspace=` filter naming another workspace finds nothing.
//
//   startGateway({ …, plugins: [requestLogRoutes(store)] });

const ADMIN = { config: { gatewayScope: 'admin' } } as const;

export interface RequestLogRoutesOptions {
  /** Clock for the summary's default range. */
  now?: () => number;
}

export function requestLogRoutes(store: RequestLogStore, options: RequestLogRoutesOptions = {}): (host: GatewayHost) => FastifyPluginAsync {
  const now = options.now ?? Date.now;
  return (host) => async (app) => {
    const fromStore = async <T>(call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (error) {
        if (error instanceof RequestLogCursorError) throw new GatewayError('AIGW_ERR_INVALID_BODY', error.message, { param: 'after' });
        host.logger.error({ err: { message: (error as Error).message } }, 'request log store query failed');
        throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'The request log store did not answer; try again.', { cause: error });
      }
    };

    app.get('/v1/logs', ADMIN, async (request) => {
      const { filter: asked, after, limit } = parseLogListQuery(request.query);
      const workspace = workspaceLimit(request);
      const filter = withinWorkspace(asked, workspace);
      // A cursor from another workspace is refused like one that does not exist.
      if (after !== undefined && workspace !== undefined && (await fromStore(() => store.get(after)))?.workspace !== workspace) {
        throw new GatewayError('AIGW_ERR_INVALID_BODY', new RequestLogCursorError(after).message, { param: 'after' });
      }
      const page = filter === undefined ? NO_RECORDS : await fromStore(() => store.query(filter, after, limit));
      const data = page.records.map(toLogEntry);
      return {
        object: 'list',
        data,
        has_more: page.hasMore,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      };
    });

    app.get('/v1/logs/:id', ADMIN, async (request) => {
      const { id } = request.params as { id: string };
      const record = await fromStore(() => store.get(id));
      const workspace = workspaceLimit(request);
      if (record === undefined || (workspace !== undefined && record.workspace !== workspace)) throw new GatewayError('AIGW_ERR_NOT_FOUND', `No request log with id "${id}".`, { param: 'id' });
      return toLogEntry(record);
    });

    app.get('/v1/analytics/summary', ADMIN, async (request) => {
      const { filter: asked, groupBy } = parseSummaryQuery(request.query, now());
      const filter = withinWorkspace(asked, workspaceLimit(request));
      const summary = filter === undefined ? NO_SUMMARY : await fromStore(() => store.summary(filter, groupBy));
      return {
        object: 'analytics.summary',
        from: new Date(asked.from).toISOString(),
        to: new Date(asked.to).toISOString(),
        group_by: groupByName(groupBy),
        total: statsJson(summary.total),
        data: summary.groups.map((group) => ({ group: group.key, ...statsJson(group) })),
        has_more: summary.hasMoreGroups,
      };
    });
  };
}

/** The workspace a caller's log reads are confined to; undefined for the org_admin scope. */
function workspaceLimit(request: FastifyRequest): string | undefined {
  const key = request.gateway.apiKey;
  if (key?.scopes.has('org_admin') === true) return undefined;
  // The routes need a key; without one, '' matches no record (a workspace is never empty).
  return key?.workspace ?? '';
}

/** The filter confined to `workspace`; undefined when it names another workspace (it matches nothing). */
function withinWorkspace<F extends { readonly workspace?: string }>(filter: F, workspace: string | undefined): F | undefined {
  if (workspace === undefined) return filter;
  if (filter.workspace !== undefined && filter.workspace !== workspace) return undefined;
  return { ...filter, workspace };
}

const NO_RECORDS: LogPage = { records: [], hasMore: false, nextCursor: undefined };

const NO_STATS: SummaryStats = {
  requests: 0,
  errors: 0,
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  costUsd: 0,
  unpricedRequests: 0,
  latencyP50Ms: null,
  latencyP95Ms: null,
  cacheHits: 0,
  cacheLookups: 0,
};

const NO_SUMMARY: AnalyticsSummary = { total: NO_STATS, groups: [], hasMoreGroups: false };

/** The API shape of one record (snake_case, nulls for unknowns). */
export function toLogEntry(record: RequestRecord) {
  return {
    id: record.id,
    object: 'request_log' as const,
    trace_id: record.traceId,
    started_at: new Date(record.startedAt).toISOString(),
    method: record.method,
    route: record.route,
    status: record.status,
    latency_ms: record.latencyMs,
    ttft_ms: record.ttftMs ?? null,
    api_key_id: record.apiKeyId ?? null,
    workspace: record.workspace ?? null,
    config_id: record.configId ?? null,
    target_path: record.targetPath ?? null,
    provider: record.provider ?? null,
    model: record.model ?? null,
    model_requested: record.modelRequested ?? null,
    metadata: record.metadata ?? {},
    usage: {
      prompt_tokens: record.promptTokens ?? null,
      completion_tokens: record.completionTokens ?? null,
      total_tokens: record.totalTokens ?? null,
      cached_tokens: record.cachedTokens ?? null,
      reasoning_tokens: record.reasoningTokens ?? null,
      estimated: record.usageEstimated === true,
    },
    cost_usd: record.costUsd ?? null,
    otel_trace_id: record.otelTraceId ?? null,
    cache_status: record.cacheStatus ?? null,
    retries: record.retries,
    guardrail_verdict: record.guardrailVerdict ?? null,
    error_code: record.errorCode ?? null,
    attempts: (record.attempts ?? []).map((attempt) => ({
      target: attempt.target,
      provider: attempt.provider ?? null,
      model: attempt.model ?? null,
      status: attempt.status,
      duration_ms: attempt.durationMs,
      error_code: attempt.errorCode ?? null,
      ...(attempt.skipped === undefined ? {} : { skipped: attempt.skipped }),
    })),
  };
}

function statsJson(stats: SummaryStats) {
  return {
    requests: stats.requests,
    errors: stats.errors,
    error_rate: stats.requests === 0 ? null : stats.errors / stats.requests,
    tokens: { prompt: stats.promptTokens, completion: stats.completionTokens, total: stats.totalTokens },
    cost: { usd: stats.costUsd, unpriced_requests: stats.unpricedRequests },
    latency_ms: { p50: stats.latencyP50Ms, p95: stats.latencyP95Ms },
    cache: { hits: stats.cacheHits, lookups: stats.cacheLookups, hit_rate: stats.cacheLookups === 0 ? null : stats.cacheHits / stats.cacheLookups },
  };
}

function groupByName(groupBy: SummaryGroupBy | undefined): string | null {
  if (groupBy === undefined) return null;
  return groupBy.kind === 'metadata' ? `metadata.${groupBy.key}` : groupBy.kind;
}
