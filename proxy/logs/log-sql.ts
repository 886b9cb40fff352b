import type { AttemptRecord, RequestRecord } from '../observability/request-record.ts';
import type { SqlDialect } from '../sql/sql-driver.ts';
import {
  MAX_SUMMARY_GROUPS,
  type LogFilter,
  type SummaryGroupBy,
  type SummaryStats,
} from './request-log-store.ts';

// The SQL both log stores share: one table layout, one WHERE builder, one summary query.
// Only what really differs (placeholders, JSON access, the time type) sits behind LogSqlSyntax,
// so SQLite and PostgreSQL answer the shared suite identically by construction.
//
// Metadata is kept twice: `metadata` as the client sent it (returned by the API) and
// `metadata_flat`, every value as a string (strings as is, anything else as its JSON text),
// which is what filters and group_by compare against — query strings only carry strings.

export const LOG_COLUMNS = [
  'id',
  'trace_id',
  'started_at',
  'method',
  'route',
  'status',
  'latency_ms',
  'ttft_ms',
  'api_key_id',
  'workspace',
  'config_id',
  'target_path',
  'provider',
  'model',
  'metadata',
  'metadata_flat',
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'cache_status',
  'retries',
  'guardrail_verdict',
  'error_code',
  'cached_tokens',
  'reasoning_tokens',
  'usage_estimated',
  'cost_usd',
  'otel_trace_id',
  'model_requested',
  'attempts',
] as const;

/** Columns added after the first release: created on open when an older table lacks them. */
export const ADDED_COLUMNS: ReadonlyArray<readonly [LogColumn, 'integer' | 'real' | 'text' | 'json']> = [
  ['cached_tokens', 'integer'],
  ['reasoning_tokens', 'integer'],
  ['usage_estimated', 'integer'],
  ['cost_usd', 'real'],
  ['otel_trace_id', 'text'],
  ['model_requested', 'text'],
  ['attempts', 'json'],
];

export type LogColumn = (typeof LOG_COLUMNS)[number];

/** A record as stored: strings cleaned, metadata and attempts as JSON text, started_at in epoch ms. */
export type LogRow = {
  [K in LogColumn]: K extends 'started_at' | 'status' | 'latency_ms' | 'retries'
    ? number
    : K extends 'ttft_ms' | 'prompt_tokens' | 'completion_tokens' | 'total_tokens' | 'cached_tokens' | 'reasoning_tokens' | 'usage_estimated' | 'cost_usd'
      ? number | null
      : K extends 'id' | 'trace_id' | 'method' | 'route'
        ? string
        : string | null;
};

/** The log SQL pieces that differ per dialect (the one SqlDialect of sql/sql-driver.ts). */
export interface LogSqlSyntax {
  readonly dialect: SqlDialect;
  /** The n-th (1-based) bound parameter: `?n` (SQLite) or `$n` (PostgreSQL). */
  placeholder(index: number): string;
  /** SQL that binds an epoch-ms instant in the column's type. */
  bindTime(ms: number, params: SqlParams): string;
  /** SQL true when metadata_flat holds every pair. */
  metadataMatches(pairs: Readonly<Record<string, string>>, params: SqlParams): string;
  /** SQL for one metadata_flat value (NULL when absent). */
  metadataValue(key: string, params: SqlParams): string;
}

/** Collects bound values; `bind` returns the placeholder for the value just added. */
export class SqlParams {
  readonly values: unknown[] = [];
  readonly #syntax: LogSqlSyntax;

  constructor(syntax: LogSqlSyntax) {
    this.#syntax = syntax;
  }

  bind(value: unknown): string {
    this.values.push(value);
    return this.#syntax.placeholder(this.values.length);
  }
}

export interface Statement {
  readonly sql: string;
  readonly values: unknown[];
}

/** `WHERE …` for the filter (or an empty string), binding into `params`. */
export function whereClause(filter: LogFilter, syntax: LogSqlSyntax, params: SqlParams, extra: string[] = []): string {
  const parts: string[] = [];
  const equal = (column: string, value: string | undefined): void => {
    if (value !== undefined) parts.push(`${column} = ${params.bind(value)}`);
  };
  equal('trace_id', filter.traceId);
  equal('route', filter.route);
  equal('provider', filter.provider);
  equal('model', filter.model);
  equal('workspace', filter.workspace);
  equal('api_key_id', filter.apiKeyId);
  if (filter.status !== undefined) {
    parts.push(`status BETWEEN ${params.bind(filter.status.min)} AND ${params.bind(filter.status.max)}`);
  }
  if (filter.from !== undefined) parts.push(`started_at >= ${syntax.bindTime(filter.from, params)}`);
  if (filter.to !== undefined) parts.push(`started_at < ${syntax.bindTime(filter.to, params)}`);
  if (filter.metadata !== undefined && Object.keys(filter.metadata).length > 0) {
    parts.push(syntax.metadataMatches(filter.metadata, params));
  }
  parts.push(...extra);
  return parts.length === 0 ? '' : `WHERE ${parts.join(' AND ')}`;
}

/** One page newest first, fetching limit + 1 rows to learn whether more follow. */
export function pageStatement(
  table: string,
  selectList: string,
  filter: LogFilter,
  after: { startedAt: number; id: string } | undefined,
  limit: number,
  syntax: LogSqlSyntax,
): Statement {
  const params = new SqlParams(syntax);
  const extra: string[] = [];
  if (after !== undefined) {
    extra.push(`(started_at, id) < (${syntax.bindTime(after.startedAt, params)}, ${params.bind(after.id)})`);
  }
  const where = whereClause(filter, syntax, params, extra);
  const sql = `SELECT ${selectList} FROM ${table} ${where} ORDER BY started_at DESC, id DESC LIMIT ${params.bind(limit + 1)}`;
  return { sql, values: params.values };
}

/**
 * Aggregates per group (or one group for all). Percentiles are nearest-rank, computed with
 * window functions both databases have: the p-th percentile of n sorted latencies is the
 * one at rank ceil(p·n), i.e. the smallest with rank·100 >= p·n (integers, no rounding).
 */
export function summaryStatement(
  table: string,
  filter: LogFilter,
  groupBy: SummaryGroupBy | undefined,
  syntax: LogSqlSyntax,
): Statement {
  const params = new SqlParams(syntax);
  const group =
    groupBy === undefined
      ? '0'
      : groupBy.kind === 'metadata'
        ? syntax.metadataValue(groupBy.key, params)
        : groupBy.kind;
  const where = whereClause(filter, syntax, params);
  const sql = `SELECT g AS group_key,
  COUNT(*) AS requests,
  SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END) AS errors,
  SUM(COALESCE(prompt_tokens, 0)) AS prompt_tokens,
  SUM(COALESCE(completion_tokens, 0)) AS completion_tokens,
  SUM(COALESCE(total_tokens, 0)) AS total_tokens,
  SUM(COALESCE(cost_usd, 0)) AS cost_usd,
  SUM(CASE WHEN cost_usd IS NULL AND total_tokens IS NOT NULL THEN 1 ELSE 0 END) AS unpriced,
  MIN(CASE WHEN rn * 100 >= 50 * n THEN latency_ms END) AS p50,
  MIN(CASE WHEN rn * 100 >= 95 * n THEN latency_ms END) AS p95,
  SUM(CASE WHEN UPPER(cache_status) LIKE '%HIT' THEN 1 ELSE 0 END) AS cache_hits,
  SUM(CASE WHEN cache_status IS NOT NULL AND UPPER(cache_status) <> 'DISABLED' THEN 1 ELSE 0 END) AS cache_lookups
FROM (
  SELECT f.*, ROW_NUMBER() OVER (PARTITION BY g ORDER BY latency_ms, id) AS rn, COUNT(*) OVER (PARTITION BY g) AS n
  FROM (
    SELECT ${group} AS g, id, status, latency_ms, prompt_tokens, completion_tokens, total_tokens, cost_usd, cache_status
    FROM ${table} ${where}
  ) f
) r
GROUP BY g
ORDER BY requests DESC, g IS NULL, g
LIMIT ${params.bind(MAX_SUMMARY_GROUPS + 1)}`;
  return { sql, values: params.values };
}

/** Summary columns as the driver returns them (PostgreSQL gives bigints as strings). */
export type SummaryRow = Record<
  'group_key' | 'requests' | 'errors' | 'prompt_tokens' | 'completion_tokens' | 'total_tokens' | 'cost_usd' | 'unpriced' | 'p50' | 'p95' | 'cache_hits' | 'cache_lookups',
  unknown
>;

export const EMPTY_STATS: SummaryStats = {
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

export function statsFromRow(row: SummaryRow): SummaryStats {
  const count = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));
  const maybe = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
  return {
    requests: count(row.requests),
    errors: count(row.errors),
    promptTokens: count(row.prompt_tokens),
    completionTokens: count(row.completion_tokens),
    totalTokens: count(row.total_tokens),
    costUsd: count(row.cost_usd),
    unpricedRequests: count(row.unpriced),
    latencyP50Ms: maybe(row.p50),
    latencyP95Ms: maybe(row.p95),
    cacheHits: count(row.cache_hits),
    cacheLookups: count(row.cache_lookups),
  };
}

/**
 * A string both databases accept and return unchanged: lone surrogates and NUL (which
 * PostgreSQL refuses in text and jsonb, failing a whole batch) become U+FFFD.
 */
export function cleanText(text: string): string {
  // Nearly every string needs neither change: testing is ~3x cheaper than rebuilding.
  return text.isWellFormed() && !text.includes('\u0000') ? text : text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

function cleanJson(value: unknown): unknown {
  if (typeof value === 'string') return cleanText(value);
  if (Array.isArray(value)) return value.map(cleanJson);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [cleanText(key), cleanJson(inner)]));
  }
  return value;
}

const cleanOrNull = (text: string | undefined): string | null => (text === undefined ? null : cleanText(text));
const numberOrNull = (value: number | undefined): number | null => (value === undefined || !Number.isFinite(value) ? null : value);
const integerOrNull = (value: number | undefined): number | null => (value === undefined || !Number.isFinite(value) ? null : Math.round(value));

/**
 * metadata and metadata_flat of a record's metadata. `text`, when given, is its JSON text: with
 * no `\u` escape in it nothing needs cleaning, and it is what JSON.stringify would give again.
 */
export function metadataColumns(metadata: Record<string, unknown>, text?: string): [string, string] {
  const clean = text === undefined || text.includes('\\u');
  const cleaned = clean ? (cleanJson(metadata) as Record<string, unknown>) : metadata;
  const flat: Record<string, string> = {};
  for (const [key, value] of Object.entries(cleaned)) flat[key] = typeof value === 'string' ? value : JSON.stringify(value);
  return [clean ? JSON.stringify(cleaned) : (text as string), JSON.stringify(flat)];
}

/** The stored form of a record. */
export function rowOf(record: RequestRecord): LogRow {
  const [metadata, metadataFlat] = record.metadata === undefined ? [null, null] : metadataColumns(record.metadata);
  return {
    id: cleanText(record.id),
    trace_id: cleanText(record.traceId),
    started_at: record.startedAt,
    method: cleanText(record.method),
    route: cleanText(record.route),
    status: Math.round(record.status),
    latency_ms: record.latencyMs,
    ttft_ms: numberOrNull(record.ttftMs),
    api_key_id: cleanOrNull(record.apiKeyId),
    workspace: cleanOrNull(record.workspace),
    config_id: cleanOrNull(record.configId),
    target_path: cleanOrNull(record.targetPath),
    provider: cleanOrNull(record.provider),
    model: cleanOrNull(record.model),
    metadata,
    metadata_flat: metadataFlat,
    prompt_tokens: integerOrNull(record.promptTokens),
    completion_tokens: integerOrNull(record.completionTokens),
    total_tokens: integerOrNull(record.totalTokens),
    cache_status: cleanOrNull(record.cacheStatus),
    retries: Math.round(record.retries),
    guardrail_verdict: cleanOrNull(record.guardrailVerdict),
    error_code: cleanOrNull(record.errorCode),
    cached_tokens: integerOrNull(record.cachedTokens),
    reasoning_tokens: integerOrNull(record.reasoningTokens),
    usage_estimated: record.usageEstimated === true ? 1 : null,
    cost_usd: numberOrNull(record.costUsd),
    otel_trace_id: cleanOrNull(record.otelTraceId),
    model_requested: cleanOrNull(record.modelRequested),
    attempts: record.attempts === undefined || record.attempts.length === 0 ? null : JSON.stringify(record.attempts.map(storedAttempt)),
  };
}

/**
 * A row's values in LOG_COLUMNS order, read by name: one shape, so each read is a fixed
 * offset (LOG_COLUMNS.map(column => row[column]) was a generic lookup per column per row).
 */
export function valuesOf(row: Readonly<Record<LogColumn, unknown>>): unknown[] {
  return [
    row.id, row.trace_id, row.started_at, row.method, row.route, row.status, row.latency_ms, row.ttft_ms, row.api_key_id, row.workspace,
    row.config_id, row.target_path, row.provider, row.model, row.metadata, row.metadata_flat, row.prompt_tokens, row.completion_tokens,
    row.total_tokens, row.cache_status, row.retries, row.guardrail_verdict, row.error_code, row.cached_tokens, row.reasoning_tokens,
    row.usage_estimated, row.cost_usd, row.otel_trace_id, row.model_requested, row.attempts,
  ];
}

/** An attempt as stored (and as GET /v1/logs shows it): snake_case, strings cleaned, ms to the µs. */
function storedAttempt(attempt: AttemptRecord): Record<string, unknown> {
  return {
    target: cleanText(attempt.target),
    provider: cleanOrNull(attempt.provider),
    model: cleanOrNull(attempt.model),
    status: attempt.status === null || !Number.isFinite(attempt.status) ? null : Math.round(attempt.status),
    duration_ms: Number.isFinite(attempt.durationMs) ? Math.round(attempt.durationMs * 1000) / 1000 : 0,
    error_code: cleanOrNull(attempt.errorCode),
    ...(attempt.skipped === undefined ? {} : { skipped: attempt.skipped }),
  };
}

/** The stored attempts back as records; anything unreadable is dropped, never thrown. */
function attemptsFromColumn(value: unknown): AttemptRecord[] | undefined {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (!Array.isArray(parsed)) return undefined;
  const text = (field: unknown): string | undefined => (typeof field === 'string' ? field : undefined);
  return parsed
    .filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null)
    .map((item) => ({
      target: String(item['target'] ?? ''),
      provider: text(item['provider']),
      model: text(item['model']),
      status: typeof item['status'] === 'number' ? item['status'] : null,
      durationMs: typeof item['duration_ms'] === 'number' ? item['duration_ms'] : 0,
      errorCode: text(item['error_code']),
      ...(item['skipped'] === 'circuit_open' || item['skipped'] === 'unresolved' ? { skipped: item['skipped'] } : {}),
    }));
}

/** A record back from a row; `metadata` may arrive as JSON text (SQLite) or parsed (jsonb). */
export function recordFromRow(row: Record<string, unknown>): RequestRecord {
  const text = (value: unknown): string | undefined => (value === null || value === undefined ? undefined : String(value));
  const num = (value: unknown): number | undefined => (value === null || value === undefined ? undefined : Number(value));
  const rawMetadata = row['metadata'];
  const metadata = typeof rawMetadata === 'string' ? (JSON.parse(rawMetadata) as Record<string, unknown>) : (rawMetadata as Record<string, unknown> | null);
  return {
    id: String(row['id']),
    traceId: String(row['trace_id']),
    startedAt: Number(row['started_at']),
    method: String(row['method']),
    route: String(row['route']),
    status: Number(row['status']),
    latencyMs: Number(row['latency_ms']),
    ttftMs: num(row['ttft_ms']),
    apiKeyId: text(row['api_key_id']),
    workspace: text(row['workspace']),
    configId: text(row['config_id']),
    targetPath: text(row['target_path']),
    provider: text(row['provider']),
    model: text(row['model']),
    metadata: metadata ?? undefined,
    promptTokens: num(row['prompt_tokens']),
    completionTokens: num(row['completion_tokens']),
    totalTokens: num(row['total_tokens']),
    cacheStatus: text(row['cache_status']),
    retries: Number(row['retries']),
    guardrailVerdict: text(row['guardrail_verdict']),
    errorCode: text(row['error_code']),
    // Later columns appear only when set, so older records read back as they were written.
    ...present('cachedTokens', num(row['cached_tokens'])),
    ...present('reasoningTokens', num(row['reasoning_tokens'])),
    ...present('usageEstimated', row['usage_estimated'] === null || row['usage_estimated'] === undefined ? undefined : Number(row['usage_estimated']) === 1),
    ...present('costUsd', num(row['cost_usd'])),
    ...present('otelTraceId', text(row['otel_trace_id'])),
    ...present('modelRequested', text(row['model_requested'])),
    ...present('attempts', attemptsFromColumn(row['attempts'])),
  };
}

function present<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
