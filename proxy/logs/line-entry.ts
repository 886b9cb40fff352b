import type { AttemptRecord, RequestRecord } from '../observability/request-record.ts';

// The SQLite store hands records to its worker as JSON. The request's log line
// (observability/log-line.ts) already is most of the record as JSON, under the line's names,
// so a record with a line goes as the line plus what the line leaves out or rounds (one
// serialisation for both, issue 32); the worker reads it back with recordFromEntry. A record
// without a line (info logging off) goes as itself.

export function entryOf(record: RequestRecord, line: string | undefined): string {
  // The line never carries the exchange; such a record goes whole (a store that keeps it reads it).
  if (line === undefined || record.exchange !== undefined) return JSON.stringify(record);
  let entry = `${line},"id":${JSON.stringify(record.id)},"startedAt":${jsonNumber(record.startedAt)},"latencyMs":${jsonNumber(record.latencyMs)}`;
  if (record.ttftMs !== undefined) entry += `,"ttftMs":${jsonNumber(record.ttftMs)}`;
  if (record.modelRequested !== undefined) entry += `,"modelRequested":${JSON.stringify(record.modelRequested)}`;
  if (record.attempts !== undefined) entry += `,"storedAttempts":${JSON.stringify(record.attempts)}`;
  return `${entry}}`;
}

/** What entryOf wrote for a record with a line: the line's fields and the additions. */
interface LineEntry {
  readonly msg: 'request';
  readonly id: string;
  readonly trace_id: string;
  readonly startedAt: number;
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly latencyMs: number;
  readonly ttftMs?: number;
  readonly api_key_id?: string;
  readonly workspace?: string;
  readonly config_id?: string;
  readonly target?: string;
  readonly provider?: string;
  readonly model?: string;
  readonly modelRequested?: string;
  readonly storedAttempts?: AttemptRecord[];
  readonly metadata?: Record<string, unknown>;
  readonly prompt_tokens?: number;
  readonly completion_tokens?: number;
  readonly total_tokens?: number;
  readonly cached_tokens?: number;
  readonly reasoning_tokens?: number;
  readonly usage_estimated?: boolean;
  readonly cost_usd?: number;
  readonly otel_trace_id?: string;
  readonly cache_status?: string;
  readonly retries: number;
  readonly guardrail_verdict?: string;
  readonly error_code?: string;
}

/** The record an entry stands for: the same one JSON.parse(JSON.stringify(record)) gives. */
export function recordFromEntry(entry: RequestRecord | LineEntry): RequestRecord {
  if (!('msg' in entry) || entry.msg !== 'request') return entry as RequestRecord;
  return {
    id: entry.id,
    traceId: entry.trace_id,
    startedAt: entry.startedAt,
    method: entry.method,
    route: entry.route,
    status: entry.status,
    latencyMs: entry.latencyMs,
    ttftMs: entry.ttftMs,
    apiKeyId: entry.api_key_id,
    workspace: entry.workspace,
    configId: entry.config_id,
    targetPath: entry.target,
    provider: entry.provider,
    model: entry.model,
    modelRequested: entry.modelRequested,
    attempts: entry.storedAttempts,
    metadata: entry.metadata,
    promptTokens: entry.prompt_tokens,
    completionTokens: entry.completion_tokens,
    totalTokens: entry.total_tokens,
    cachedTokens: entry.cached_tokens,
    reasoningTokens: entry.reasoning_tokens,
    usageEstimated: entry.usage_estimated,
    costUsd: entry.cost_usd,
    otelTraceId: entry.otel_trace_id,
    cacheStatus: entry.cache_status,
    retries: entry.retries,
    guardrailVerdict: entry.guardrail_verdict,
    errorCode: entry.error_code,
  };
}

/** As JSON.stringify writes a number: NaN and ±Infinity become null. */
function jsonNumber(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}
