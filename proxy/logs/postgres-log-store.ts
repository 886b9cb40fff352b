import type pg from 'pg';
import { leasePostgresPool, type PostgresPoolLease } from '../sql/postgres-pool.ts';
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
  type LogColumn,
  type LogSqlSyntax,
  type SummaryRow,
} from './log-sql.ts';
import {
  MAX_SUMMARY_GROUPS,
  RequestLogCursorError,
  type AnalyticsSummary,
  type LogFilter,
  type LogPage,
  type RequestLogStore,
  type SummaryGroupBy,
} from './request-log-store.ts';

// The cluster log store: one PostgreSQL table shared by every replica (DATABASE_URL).
// started_at is timestamptz so operators can query it with plain SQL; metadata and
// metadata_flat are jsonb, the latter GIN-indexed so several metadata filters are one
// containment test (`metadata_flat @> '{"user":"u1","env":"prod"}'`).
//
//   const store = await PostgresLogStore.open({ connectionString: process.env.DATABASE_URL });

export interface PostgresLogStoreOptions {
  connectionString: string;
  /** Table, optionally schema-qualified (`logs.request_logs`). Default `aigateway_request_logs`. */
  table?: string;
}

const DEFAULT_TABLE = 'aigateway_request_logs';
const DELETE_CHUNK = 5_000;
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

/** PostgreSQL array type of each column, for the one-statement unnest insert. */
const ARRAY_TYPES: Record<LogColumn, string> = {
  id: 'text[]',
  trace_id: 'text[]',
  started_at: 'timestamptz[]',
  method: 'text[]',
  route: 'text[]',
  status: 'int[]',
  latency_ms: 'float8[]',
  ttft_ms: 'float8[]',
  api_key_id: 'text[]',
  workspace: 'text[]',
  config_id: 'text[]',
  target_path: 'text[]',
  provider: 'text[]',
  model: 'text[]',
  metadata: 'jsonb[]',
  metadata_flat: 'jsonb[]',
  prompt_tokens: 'int8[]',
  completion_tokens: 'int8[]',
  total_tokens: 'int8[]',
  cache_status: 'text[]',
  retries: 'int[]',
  guardrail_verdict: 'text[]',
  error_code: 'text[]',
  cached_tokens: 'int8[]',
  reasoning_tokens: 'int8[]',
  usage_estimated: 'int[]',
  cost_usd: 'float8[]',
  otel_trace_id: 'text[]',
};

const POSTGRES_TYPES = { integer: 'bigint', real: 'float8', text: 'text' } as const;

export const POSTGRES_LOG_SYNTAX: LogSqlSyntax = {
  dialect: 'postgres',
  placeholder: (index) => `$${index}`,
  bindTime: (ms, params) => `${params.bind(new Date(ms).toISOString())}::timestamptz`,
  metadataMatches: (pairs, params) => `metadata_flat @> ${params.bind(JSON.stringify(pairs))}::jsonb`,
  metadataValue: (key, params) => `(metadata_flat ->> ${params.bind(key)}::text)`,
};

// started_at comes back as epoch ms (a float8 holds every ms instant exactly).
const SELECT_LIST = LOG_COLUMNS.map((column) =>
  column === 'started_at' ? `(EXTRACT(EPOCH FROM started_at) * 1000)::float8 AS started_at` : column,
).join(', ');

export class PostgresLogStore implements RequestLogStore {
  readonly #lease: PostgresPoolLease;
  readonly #table: string;
  #closed = false;

  private constructor(lease: PostgresPoolLease, table: string) {
    this.#lease = lease;
    this.#table = table;
  }

  /** The shared pool, refused once this store is closed. */
  get #pool(): pg.Pool {
    if (this.#closed) throw new Error('request log store closed');
    return this.#lease.pool;
  }

  /** Connects and creates the table and indexes when missing (safe with replicas starting together). */
  static async open(options: PostgresLogStoreOptions): Promise<PostgresLogStore> {
    const table = options.table ?? DEFAULT_TABLE;
    if (!IDENTIFIER.test(table)) throw new RangeError(`invalid request log table name "${table}"`);
    // The pool shared with the batch and file stores on the same database (postgres-pool.ts).
    const lease = leasePostgresPool(options.connectionString);
    try {
      await createSchema(lease.pool, table);
    } catch (error) {
      await lease.release();
      throw error;
    }
    return new PostgresLogStore(lease, table);
  }

  async insertMany(records: readonly RequestRecord[]): Promise<void> {
    if (records.length === 0) return;
    const rows = records.map(rowOf);
    const columns = LOG_COLUMNS.map((column) =>
      rows.map((row) => (column === 'started_at' ? new Date(row.started_at).toISOString() : row[column])),
    );
    const unnest = LOG_COLUMNS.map((column, index) => `$${index + 1}::${ARRAY_TYPES[column]}`).join(', ');
    await this.#pool.query(
      `INSERT INTO ${this.#table} (${LOG_COLUMNS.join(', ')}) SELECT * FROM unnest(${unnest}) ON CONFLICT (id) DO NOTHING`,
      columns,
    );
  }

  async query(filter: LogFilter, after: string | undefined, limit: number): Promise<LogPage> {
    let cursor: { startedAt: number; id: string } | undefined;
    if (after !== undefined) {
      const found = await this.#pool.query<{ started_at: number }>(
        `SELECT (EXTRACT(EPOCH FROM started_at) * 1000)::float8 AS started_at FROM ${this.#table} WHERE id = $1`,
        [after],
      );
      const row = found.rows[0];
      if (row === undefined) throw new RequestLogCursorError(after);
      cursor = { startedAt: row.started_at, id: after };
    }
    const statement = pageStatement(this.#table, SELECT_LIST, filter, cursor, limit, POSTGRES_LOG_SYNTAX);
    const result = await this.#pool.query<Record<string, unknown>>(statement.sql, statement.values);
    const records = result.rows.slice(0, limit).map(recordFromRow);
    const hasMore = result.rows.length > limit;
    return { records, hasMore, nextCursor: hasMore ? records.at(-1)?.id : undefined };
  }

  async get(id: string): Promise<RequestRecord | undefined> {
    const result = await this.#pool.query<Record<string, unknown>>(`SELECT ${SELECT_LIST} FROM ${this.#table} WHERE id = $1`, [id]);
    const row = result.rows[0];
    return row === undefined ? undefined : recordFromRow(row);
  }

  async summary(filter: LogFilter, groupBy: SummaryGroupBy | undefined): Promise<AnalyticsSummary> {
    const run = async (by: SummaryGroupBy | undefined): Promise<SummaryRow[]> => {
      const statement = summaryStatement(this.#table, filter, by, POSTGRES_LOG_SYNTAX);
      return (await this.#pool.query<SummaryRow>(statement.sql, statement.values)).rows;
    };
    const [totalRows, groupRows] = await Promise.all([run(undefined), groupBy === undefined ? [] : run(groupBy)]);
    const totalRow = totalRows[0];
    const total = totalRow === undefined ? EMPTY_STATS : statsFromRow(totalRow);
    const groups = groupRows.slice(0, MAX_SUMMARY_GROUPS).map((row) => ({
      key: row.group_key === null || row.group_key === undefined ? null : String(row.group_key),
      ...statsFromRow(row),
    }));
    return { total, groups, hasMoreGroups: groupRows.length > MAX_SUMMARY_GROUPS };
  }

  /** Deletes in chunks so one retention pass never holds a long transaction. */
  async deleteOlderThan(cutoffMs: number): Promise<number> {
    const cutoff = new Date(cutoffMs).toISOString();
    let deleted = 0;
    for (;;) {
      const result = await this.#pool.query(
        `DELETE FROM ${this.#table} WHERE id IN (SELECT id FROM ${this.#table} WHERE started_at < $1::timestamptz LIMIT ${DELETE_CHUNK})`,
        [cutoff],
      );
      const changes = result.rowCount ?? 0;
      deleted += changes;
      if (changes < DELETE_CHUNK) return deleted;
    }
  }

  /** Releases the shared pool (ended when its last user closes). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#lease.release();
  }
}

async function createSchema(pool: pg.Pool, table: string): Promise<void> {
  const base = table.replace('.', '_');
  const client = await pool.connect();
  // With everything in place no DDL runs: ALTER TABLE and CREATE INDEX lock the table even when
  // there is nothing to do, and a replica starting beside busy ones would wait on (or deadlock
  // with) their writes. This check is a catalog read.
  const indexes = ['started', 'trace', 'provider_model', 'metadata'].map((suffix) => `${table.includes('.') ? `${table.split('.')[0]}.` : ''}${base}_${suffix}`);
  const present = await client.query<{ columns: string[] | null; indexes: number }>(
    `SELECT (SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped) AS columns,
            (SELECT count(*)::int FROM json_array_elements_text($2::json) AS name WHERE to_regclass(name) IS NOT NULL) AS indexes`,
    [table, JSON.stringify(indexes)],
  );
  const columns = new Set(present.rows[0]?.columns ?? []);
  if (present.rows[0]?.indexes === indexes.length && ADDED_COLUMNS.every(([column]) => columns.has(column))) {
    client.release();
    return;
  }
  try {
    await client.query('BEGIN');
    // Replicas starting together would race on CREATE … IF NOT EXISTS; one at a time.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`aigateway:${table}`]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${table} (
        id text COLLATE "C" NOT NULL PRIMARY KEY,
        trace_id text NOT NULL,
        started_at timestamptz NOT NULL,
        method text NOT NULL,
        route text NOT NULL,
        status int NOT NULL,
        latency_ms float8 NOT NULL,
        ttft_ms float8,
        api_key_id text,
        workspace text,
        config_id text,
        target_path text,
        provider text,
        model text,
        metadata jsonb,
        metadata_flat jsonb,
        prompt_tokens bigint,
        completion_tokens bigint,
        total_tokens bigint,
        cache_status text,
        retries int NOT NULL,
        guardrail_verdict text,
        error_code text
      )`);
    for (const [column, type] of ADDED_COLUMNS) {
      await client.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${POSTGRES_TYPES[type]}`);
    }
    await client.query(`CREATE INDEX IF NOT EXISTS ${base}_started ON ${table} (started_at, id)`);
    await client.query(`CREATE INDEX IF NOT EXISTS ${base}_trace ON ${table} (trace_id)`);
    await client.query(`CREATE INDEX IF NOT EXISTS ${base}_provider_model ON ${table} (provider, model, started_at)`);
    await client.query(`CREATE INDEX IF NOT EXISTS ${base}_metadata ON ${table} USING gin (metadata_flat jsonb_path_ops)`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
