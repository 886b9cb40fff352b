import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { openSqliteDatabase } from '../sql/sqlite-database.ts';
import type { RequestRecord } from '../observability/request-record.ts';
import {
  EMPTY_STATS,
  ADDED_COLUMNS,
  LOG_COLUMNS,
  pageStatement,
  recordFromRow,
  rowOf,
  statsFromRow,
  summaryStatement,
  type LogSqlSyntax,
  type SqlParams,
  type SummaryRow,
} from './log-sql.ts';
import {
  MAX_SUMMARY_GROUPS,
  RequestLogCursorError,
  isQueryableMetadataKey,
  type AnalyticsSummary,
  type LogFilter,
  type LogPage,
  type SummaryGroupBy,
} from './request-log-store.ts';

// The SQLite log table, synchronous (node:sqlite). It runs inside the store's worker thread
// (sqlite-log-worker.ts): a commit can wait on the disk for tens of ms, and a summary over a
// large table takes longer, so none of it may run on the thread that serves requests.

const TABLE = 'request_logs';
const DELETE_CHUNK = 5_000;

/** JSON path of one metadata key: `$."key"` (keys with `"` or `\` are refused upstream). */
function metadataPath(key: string): string {
  if (!isQueryableMetadataKey(key)) throw new RangeError(`metadata key not queryable: ${JSON.stringify(key)}`);
  return `$."${key}"`;
}

export const SQLITE_LOG_SYNTAX: LogSqlSyntax = {
  dialect: 'sqlite',
  placeholder: (index) => `?${index}`,
  bindTime: (ms: number, params: SqlParams) => params.bind(ms),
  metadataMatches(pairs, params) {
    return Object.entries(pairs)
      .map(([key, value]) => `json_extract(metadata_flat, ${params.bind(metadataPath(key))}) = ${params.bind(value)}`)
      .join(' AND ');
  },
  metadataValue: (key, params) => `json_extract(metadata_flat, ${params.bind(metadataPath(key))})`,
};

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  id TEXT NOT NULL PRIMARY KEY,
  trace_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  method TEXT NOT NULL,
  route TEXT NOT NULL,
  status INTEGER NOT NULL,
  latency_ms REAL NOT NULL,
  ttft_ms REAL,
  api_key_id TEXT,
  workspace TEXT,
  config_id TEXT,
  target_path TEXT,
  provider TEXT,
  model TEXT,
  metadata TEXT,
  metadata_flat TEXT,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  total_tokens INTEGER,
  cache_status TEXT,
  retries INTEGER NOT NULL,
  guardrail_verdict TEXT,
  error_code TEXT,
  cached_tokens INTEGER,
  reasoning_tokens INTEGER,
  usage_estimated INTEGER,
  cost_usd REAL,
  otel_trace_id TEXT
);
CREATE INDEX IF NOT EXISTS ${TABLE}_started ON ${TABLE} (started_at, id);
CREATE INDEX IF NOT EXISTS ${TABLE}_trace ON ${TABLE} (trace_id);
`;

export class SqliteLogDatabase {
  readonly #db: DatabaseSync;
  readonly #insert: StatementSync;
  readonly #get: StatementSync;
  readonly #startOf: StatementSync;
  readonly #deleteChunk: StatementSync;

  /** Opens (creating) the log database at `path` (`:memory:` for a scratch one). */
  constructor(path: string) {
    // WAL and synchronous NORMAL (sqlite-database.ts): losing the last commits on power loss is fine for logs.
    this.#db = openSqliteDatabase(path);
    this.#db.exec(SCHEMA);
    const present = new Set((this.#db.prepare(`PRAGMA table_info(${TABLE})`).all() as { name: string }[]).map((column) => column.name));
    for (const [column, type] of ADDED_COLUMNS) {
      if (!present.has(column)) this.#db.exec(`ALTER TABLE ${TABLE} ADD COLUMN ${column} ${type.toUpperCase()}`);
    }
    const placeholders = LOG_COLUMNS.map((_, index) => `?${index + 1}`).join(', ');
    this.#insert = this.#db.prepare(`INSERT OR IGNORE INTO ${TABLE} (${LOG_COLUMNS.join(', ')}) VALUES (${placeholders})`);
    this.#get = this.#db.prepare(`SELECT * FROM ${TABLE} WHERE id = ?1`);
    this.#startOf = this.#db.prepare(`SELECT started_at FROM ${TABLE} WHERE id = ?1`);
    this.#deleteChunk = this.#db.prepare(
      `DELETE FROM ${TABLE} WHERE rowid IN (SELECT rowid FROM ${TABLE} WHERE started_at < ?1 LIMIT ${DELETE_CHUNK})`,
    );
  }

  insertMany(records: readonly RequestRecord[]): void {
    if (records.length === 0) return;
    this.#db.exec('BEGIN');
    try {
      for (const record of records) {
        const row = rowOf(record);
        this.#insert.run(...LOG_COLUMNS.map((column) => row[column]));
      }
      this.#db.exec('COMMIT');
    } catch (error) {
      this.#db.exec('ROLLBACK');
      throw error;
    }
  }

  query(filter: LogFilter, after: string | undefined, limit: number): LogPage {
    let cursor: { startedAt: number; id: string } | undefined;
    if (after !== undefined) {
      const found = this.#startOf.get(after) as { started_at: number } | undefined;
      if (found === undefined) throw new RequestLogCursorError(after);
      cursor = { startedAt: found.started_at, id: after };
    }
    const statement = pageStatement(TABLE, '*', filter, cursor, limit, SQLITE_LOG_SYNTAX);
    const rows = this.#db.prepare(statement.sql).all(...(statement.values as SqliteValue[]));
    const records = rows.slice(0, limit).map((row) => recordFromRow(row));
    const hasMore = rows.length > limit;
    return { records, hasMore, nextCursor: hasMore ? records.at(-1)?.id : undefined };
  }

  get(id: string): RequestRecord | undefined {
    const row = this.#get.get(id);
    return row === undefined ? undefined : recordFromRow(row);
  }

  summary(filter: LogFilter, groupBy: SummaryGroupBy | undefined): AnalyticsSummary {
    const run = (by: SummaryGroupBy | undefined): SummaryRow[] => {
      const statement = summaryStatement(TABLE, filter, by, SQLITE_LOG_SYNTAX);
      return this.#db.prepare(statement.sql).all(...(statement.values as SqliteValue[])) as SummaryRow[];
    };
    const totalRow = run(undefined)[0];
    const total = totalRow === undefined ? EMPTY_STATS : statsFromRow(totalRow);
    if (groupBy === undefined) return { total, groups: [], hasMoreGroups: false };
    const rows = run(groupBy);
    const groups = rows.slice(0, MAX_SUMMARY_GROUPS).map((row) => ({
      key: row.group_key === null || row.group_key === undefined ? null : String(row.group_key),
      ...statsFromRow(row),
    }));
    return { total, groups, hasMoreGroups: rows.length > MAX_SUMMARY_GROUPS };
  }

  /** Deletes in chunks, each its own transaction, so the WAL stays small. */
  deleteOlderThan(cutoffMs: number): number {
    let deleted = 0;
    for (;;) {
      const changes = Number(this.#deleteChunk.run(cutoffMs).changes);
      deleted += changes;
      if (changes < DELETE_CHUNK) return deleted;
    }
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}

type SqliteValue = null | number | bigint | string | NodeJS.ArrayBufferView;
