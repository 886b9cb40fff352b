import type { RequestRecord } from '../observability/request-record.ts';

// The request log store: one interface, two implementations (SQLite standalone, PostgreSQL
// in a cluster), both held to test/proxy/logs/request-log-store-suite.ts. Records arrive in
// batches from the writer (request-log-writer.ts); the /v1/logs and /v1/analytics routes read.
//
// Listing order is newest first: (startedAt DESC, id DESC), a total order. A page's cursor
// is the id of its last record, and the next page is everything strictly after that
// (startedAt, id) pair — keyset pagination, so records inserted while a client walks the
// pages neither repeat nor shift what it has not seen yet.

/** What a listing or a summary is restricted to; every field given must match. */
export interface LogFilter {
  readonly traceId?: string;
  /** Route pattern, e.g. `/v1/chat/completions`. */
  readonly route?: string;
  /** metadata key → value; a non-string metadata value matches its JSON text (42 ↔ "42"). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Inclusive status range: an exact status is {min: s, max: s}, `5xx` is {min: 500, max: 599}. */
  readonly status?: { readonly min: number; readonly max: number };
  readonly provider?: string;
  readonly model?: string;
  readonly workspace?: string;
  readonly apiKeyId?: string;
  /** Epoch ms, inclusive. */
  readonly from?: number;
  /** Epoch ms, exclusive. */
  readonly to?: number;
}

export interface LogPage {
  readonly records: readonly RequestRecord[];
  readonly hasMore: boolean;
  /** Pass back as `after` for the next page; undefined on the last page. */
  readonly nextCursor: string | undefined;
}

export type SummaryGroupBy =
  | { readonly kind: 'provider' }
  | { readonly kind: 'model' }
  | { readonly kind: 'workspace' }
  | { readonly kind: 'api_key_id' }
  | { readonly kind: 'metadata'; readonly key: string };

/** Aggregates over a set of records. Latency percentiles are nearest-rank (a real sample). */
export interface SummaryStats {
  readonly requests: number;
  /** Records with status >= 400. */
  readonly errors: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** USD of the priced records. */
  readonly costUsd: number;
  /** Records with token usage but no known price: their cost is unknown, not zero. */
  readonly unpricedRequests: number;
  readonly latencyP50Ms: number | null;
  readonly latencyP95Ms: number | null;
  /** Records whose cache status ends in HIT (HIT, SEMANTIC HIT). */
  readonly cacheHits: number;
  /** Records that consulted the cache: a cache status other than DISABLED. */
  readonly cacheLookups: number;
}

export interface SummaryGroup extends SummaryStats {
  /** The provider, model or metadata value; null for records without one. */
  readonly key: string | null;
}

export interface AnalyticsSummary {
  readonly total: SummaryStats;
  /** Largest groups first (by requests), at most MAX_SUMMARY_GROUPS; empty without groupBy. */
  readonly groups: readonly SummaryGroup[];
  readonly hasMoreGroups: boolean;
}

export const MAX_SUMMARY_GROUPS = 100;
export const MAX_PAGE_SIZE = 100;

export interface RequestLogStore {
  /** Stores records; a record whose id is already stored is skipped. */
  insertMany(records: readonly RequestRecord[]): Promise<void>;
  /** One page, newest first. Throws RequestLogCursorError when `after` names no stored record. */
  query(filter: LogFilter, after: string | undefined, limit: number): Promise<LogPage>;
  get(id: string): Promise<RequestRecord | undefined>;
  summary(filter: LogFilter, groupBy: SummaryGroupBy | undefined): Promise<AnalyticsSummary>;
  /** Deletes records that started before `cutoffMs` (epoch ms); returns how many. */
  deleteOlderThan(cutoffMs: number): Promise<number>;
  /**
   * The cutoff retention should ask for instead of `cutoffMs` (never later): a store
   * partitioned by day rounds down to its day, so a pass drops whole partitions.
   */
  retentionCutoff?(cutoffMs: number): number;
  close(): Promise<void>;
}

/** The `after` cursor names no stored record (never existed, or removed by retention). */
export class RequestLogCursorError extends Error {
  readonly code = 'AIGW_ERR_LOG_CURSOR';
  readonly cursor: string;

  constructor(cursor: string) {
    super(`No request log with id "${cursor}" to continue after.`);
    this.name = 'RequestLogCursorError';
    this.cursor = cursor;
  }
}

/** Metadata keys usable in filters and group_by: no quotes, backslashes or control characters. */
export function isQueryableMetadataKey(key: string): boolean {
  return key.length > 0 && key.length <= 128 && !/["\\\u0000-\u001f]/.test(key);
}
