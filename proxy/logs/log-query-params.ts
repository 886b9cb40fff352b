import { GatewayError } from '../errors.ts';
import {
  MAX_PAGE_SIZE,
  isQueryableMetadataKey,
  type LogFilter,
  type SummaryGroupBy,
} from './request-log-store.ts';

// Query strings of GET /v1/logs and GET /v1/analytics/summary → store filters. Pure. Every
// problem is a 400 naming the parameter; unknown parameters are refused too, so a typo
// (`traceid=…`) fails loudly instead of silently listing everything.

export interface LogListQuery {
  readonly filter: LogFilter;
  readonly after: string | undefined;
  readonly limit: number;
}

export interface SummaryQuery {
  /** Always bounded: `from` and `to` are set. */
  readonly filter: LogFilter & { readonly from: number; readonly to: number };
  readonly groupBy: SummaryGroupBy | undefined;
}

export const DEFAULT_PAGE_SIZE = 20;
/** The summary's range when `from` is not given: the day before `to`. */
export const DEFAULT_SUMMARY_RANGE_MS = 86_400_000;

const FILTER_PARAMS = new Set(['trace_id', 'route', 'provider', 'model', 'workspace', 'api_key_id', 'status', 'from', 'to']);
const MAX_VALUE_LENGTH = 1_024;
const METADATA_PREFIX = 'metadata.';
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** GET /v1/logs: filters plus `after` and `limit` (1–100, default 20). */
export function parseLogListQuery(query: unknown): LogListQuery {
  const params = singleValued(query, new Set(['after', 'limit']));
  const filter = parseFilter(params);
  let limit = DEFAULT_PAGE_SIZE;
  const rawLimit = params.get('limit');
  if (rawLimit !== undefined) {
    limit = Number(rawLimit);
    if (!/^\d+$/.test(rawLimit) || limit < 1 || limit > MAX_PAGE_SIZE) invalid('limit', `limit must be an integer from 1 to ${MAX_PAGE_SIZE}.`);
  }
  const after = params.get('after');
  if (after === '') invalid('after', 'after must be the id of a request log (the last_id of the previous page).');
  return { filter, after, limit };
}

/** GET /v1/analytics/summary: filters plus `group_by`; the range defaults to the last day. */
export function parseSummaryQuery(query: unknown, now: number): SummaryQuery {
  const params = singleValued(query, new Set(['group_by']));
  const filter = parseFilter(params);
  const to = filter.to ?? now;
  const from = filter.from ?? to - DEFAULT_SUMMARY_RANGE_MS;
  if (from > to) invalid('from', 'from must not be later than to.');
  return { filter: { ...filter, from, to }, groupBy: parseGroupBy(params.get('group_by')) };
}

function parseFilter(params: ReadonlyMap<string, string>): LogFilter {
  const metadata: Record<string, string> = {};
  for (const [name, value] of params) {
    if (!name.startsWith(METADATA_PREFIX)) continue;
    const key = name.slice(METADATA_PREFIX.length);
    if (!isQueryableMetadataKey(key)) invalid(name, 'A metadata filter is metadata.<key>=<value>; the key is 1–128 characters without quotes, backslashes or control characters.');
    metadata[key] = value;
  }
  const text = (name: string): string | undefined => {
    const value = params.get(name);
    if (value === '') invalid(name, `${name} must not be empty.`);
    return value;
  };
  const from = parseInstant(params.get('from'), 'from');
  const to = parseInstant(params.get('to'), 'to');
  if (from !== undefined && to !== undefined && from > to) invalid('from', 'from must not be later than to.');
  const filter: { -readonly [K in keyof LogFilter]: LogFilter[K] } = {};
  const assign = <K extends keyof LogFilter>(key: K, value: LogFilter[K] | undefined): void => {
    if (value !== undefined) filter[key] = value;
  };
  assign('traceId', text('trace_id'));
  assign('route', text('route'));
  assign('provider', text('provider'));
  assign('model', text('model'));
  assign('workspace', text('workspace'));
  assign('apiKeyId', text('api_key_id'));
  assign('status', parseStatus(params.get('status')));
  assign('from', from);
  assign('to', to);
  if (Object.keys(metadata).length > 0) filter.metadata = metadata;
  return filter;
}

/** `404` (exact) or `4xx` (class). */
function parseStatus(value: string | undefined): LogFilter['status'] {
  if (value === undefined) return undefined;
  if (/^[1-5]\d\d$/.test(value)) return { min: Number(value), max: Number(value) };
  if (/^[1-5]xx$/i.test(value)) {
    const base = Number(value[0]) * 100;
    return { min: base, max: base + 99 };
  }
  return invalid('status', 'status must be an HTTP status (e.g. 429) or a class (2xx, 4xx, 5xx).');
}

/** ISO 8601 with an explicit zone (or a bare date, UTC), or epoch milliseconds. */
function parseInstant(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  let ms = Number.NaN;
  if (/^\d{1,16}$/.test(value)) ms = Number(value);
  else if (ISO_8601.test(value)) ms = Date.parse(value);
  if (!Number.isFinite(ms) || ms > 8.64e15) {
    invalid(name, `${name} must be an ISO 8601 time with a zone (2025-01-31T12:00:00Z), a date (2025-01-31) or epoch milliseconds.`);
  }
  return ms;
}

function parseGroupBy(value: string | undefined): SummaryGroupBy | undefined {
  if (value === undefined) return undefined;
  if (value === 'provider' || value === 'model' || value === 'workspace' || value === 'api_key_id') return { kind: value };
  if (value.startsWith(METADATA_PREFIX) && isQueryableMetadataKey(value.slice(METADATA_PREFIX.length))) {
    return { kind: 'metadata', key: value.slice(METADATA_PREFIX.length) };
  }
  return invalid('group_by', 'group_by must be provider, model, workspace, api_key_id or metadata.<key>.');
}

/** Query params as single strings; repeated, unknown or overlong parameters are refused. */
function singleValued(query: unknown, extra: ReadonlySet<string>): Map<string, string> {
  const params = new Map<string, string>();
  if (typeof query !== 'object' || query === null) return params;
  for (const [name, value] of Object.entries(query)) {
    if (!FILTER_PARAMS.has(name) && !extra.has(name) && !name.startsWith(METADATA_PREFIX)) {
      invalid(name, `Unknown query parameter "${name}".`);
    }
    if (typeof value !== 'string') invalid(name, `${name} must be given once.`);
    if (value.length > MAX_VALUE_LENGTH) invalid(name, `${name} is longer than ${MAX_VALUE_LENGTH} characters.`);
    params.set(name, value);
  }
  return params;
}

function invalid(param: string, message: string): never {
  // Query problems share the body's 400 code, as the policies API does.
  throw new GatewayError('AIGW_ERR_INVALID_BODY', message, { param });
}
