import { num, type SqlDialect, type SqlDriver, type SqlExecutor, type SqlValue } from '../sql/sql-driver.ts';
import { ADDED_COLUMNS, LOG_COLUMNS, type LogColumn, type LogSqlSyntax } from './log-sql.ts';
import { isQueryableMetadataKey } from './request-log-store.ts';

// What differs per database under the request log store (sql-log-store.ts): the SQLite and
// PostgreSQL dialects (column types, schema, indexes, batched inserts) and PostgreSQL's daily
// partitions, made ahead and dropped past retention.

const DAY_MS = 86_400_000;
/** Daily partitions kept made ahead of today (and yesterday, for a clock a little behind). */
const PARTITION_DAYS_AHEAD = 3;
/** How often a store checks that the coming days' partitions exist. */
export const PARTITION_CHECK_MS = 3_600_000;
/** DDL on the shared table waits at most this long for a lock, then tries again later. */
const DDL_LOCK_TIMEOUT = '3s';
/** A dropped partition's rows are counted exactly up to this size; above it pg's estimate is used. */
const EXACT_COUNT_LIMIT = 100_000;

export const DELETE_CHUNK = 5_000;
export const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

export interface Dialect {
  readonly defaultTable: string;
  readonly syntax: LogSqlSyntax;
  /** The columns to select, started_at as epoch ms. */
  readonly selectList: string;
  /** An epoch-ms instant as the column's type binds it. */
  bindTime(ms: number): SqlValue;
  /** Inserts the rows (values in LOG_COLUMNS order) with as few statements as the database allows (ON CONFLICT DO NOTHING). */
  insert(driver: SqlDriver, table: string, rows: ReadonlyArray<readonly unknown[]>): Promise<void>;
  /** Creates what is missing; says whether the table is partitioned by day (PostgreSQL). */
  createSchema(driver: SqlDriver, table: string): Promise<{ partitioned: boolean }>;
}

/** JSON path of one metadata key: `$."key"` (keys with `"` or `\` are refused upstream). */
function metadataPath(key: string): string {
  if (!isQueryableMetadataKey(key)) throw new RangeError(`metadata key not queryable: ${JSON.stringify(key)}`);
  return `$."${key}"`;
}

// One prepared single-row insert, run per row inside one transaction: SQLite looks numbered
// parameters (`?1`…) up linearly, so a multi-row statement with hundreds of them costs more
// than it saves (measured: 74 against 11 µs a row).
const SQLITE_INSERT = (table: string): string =>
  `INSERT INTO ${table} (${LOG_COLUMNS.join(', ')}) VALUES (${LOG_COLUMNS.map((_, index) => `$${index + 1}`).join(', ')}) ON CONFLICT (id) DO NOTHING`;

/** SqliteDriver's runBatch, found by shape (importing the driver would load node:sqlite beside PostgreSQL too). */
interface BatchRunner {
  runBatch(sql: string, rows: ReadonlyArray<readonly SqlValue[]>): Promise<void>;
}
const isBatchRunner = (driver: SqlDriver): driver is SqlDriver & BatchRunner => typeof (driver as Partial<BatchRunner>).runBatch === 'function';

// JSON is kept as TEXT (a declared JSON type would get NUMERIC affinity).
const SQLITE_TYPES = { integer: 'INTEGER', real: 'REAL', text: 'TEXT', json: 'TEXT' } as const;

const SQLITE: Dialect = {
  defaultTable: 'request_logs',
  syntax: {
    dialect: 'sqlite',
    placeholder: (index) => `$${index}`,
    bindTime: (ms, params) => params.bind(ms),
    metadataMatches: (pairs, params) =>
      Object.entries(pairs)
        .map(([key, value]) => `json_extract(metadata_flat, ${params.bind(metadataPath(key))}) = ${params.bind(value)}`)
        .join(' AND '),
    metadataValue: (key, params) => `json_extract(metadata_flat, ${params.bind(metadataPath(key))})`,
  },
  selectList: LOG_COLUMNS.join(', '),
  bindTime: (ms) => ms,
  async insert(driver, table, rows) {
    const sql = SQLITE_INSERT(table);
    // One transaction for the batch: one commit, however many rows; on the SQLite driver a
    // synchronous loop (no promise per row).
    if (isBatchRunner(driver)) return driver.runBatch(sql, rows as ReadonlyArray<readonly SqlValue[]>);
    await driver.transaction(async (tx) => {
      for (const row of rows) await tx.query(sql, row as SqlValue[]);
    });
  },
  async createSchema(driver, table) {
    await driver.exec(`
CREATE TABLE IF NOT EXISTS ${table} (
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
  otel_trace_id TEXT,
  model_requested TEXT,
  attempts TEXT
);
CREATE INDEX IF NOT EXISTS ${table}_started ON ${table} (started_at, id);
CREATE INDEX IF NOT EXISTS ${table}_trace ON ${table} (trace_id);`);
    // A table from before the later columns: add them.
    const present = new Set((await driver.query(`SELECT name FROM pragma_table_info('${table}')`)).map((row) => String(row['name'])));
    for (const [column, type] of ADDED_COLUMNS) {
      if (!present.has(column)) await driver.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${SQLITE_TYPES[type]}`);
    }
    return { partitioned: false };
  },
};

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
  model_requested: 'text[]',
  attempts: 'jsonb[]',
};

const POSTGRES_TYPES = { integer: 'bigint', real: 'float8', text: 'text', json: 'jsonb' } as const;
const POSTGRES_INDEXES = ['started', 'trace', 'provider_model', 'metadata'] as const;

// started_at is timestamptz so operators can query it with plain SQL; metadata and
// metadata_flat are jsonb, the latter GIN-indexed so several metadata filters are one
// containment test (`metadata_flat @> '{"user":"u1","env":"prod"}'`).
const POSTGRES: Dialect = {
  defaultTable: 'aigateway_request_logs',
  syntax: {
    dialect: 'postgres',
    placeholder: (index) => `$${index}`,
    bindTime: (ms, params) => `${params.bind(new Date(ms).toISOString())}::timestamptz`,
    metadataMatches: (pairs, params) => `metadata_flat @> ${params.bind(JSON.stringify(pairs))}::jsonb`,
    metadataValue: (key, params) => `(metadata_flat ->> ${params.bind(key)}::text)`,
  },
  // A float8 holds every ms instant exactly.
  selectList: LOG_COLUMNS.map((column) => (column === 'started_at' ? `(EXTRACT(EPOCH FROM started_at) * 1000)::float8 AS started_at` : column)).join(', '),
  bindTime: (ms) => new Date(ms).toISOString(),
  async insert(driver, table, rows) {
    // One statement a batch: each column as an array, unnested into rows.
    const columns = LOG_COLUMNS.map((column, index) => rows.map((row) => (column === 'started_at' ? new Date(row[index] as number).toISOString() : row[index])));
    const unnest = LOG_COLUMNS.map((column, index) => `$${index + 1}::${ARRAY_TYPES[column]}`).join(', ');
    // No conflict target: a partitioned table's key is (id, started_at), an older table's id.
    await driver.query(`INSERT INTO ${table} (${LOG_COLUMNS.join(', ')}) SELECT * FROM unnest(${unnest}) ON CONFLICT DO NOTHING`, columns as SqlValue[]);
  },
  async createSchema(driver, table) {
    const base = table.replace('.', '_');
    const schema = table.includes('.') ? `${table.split('.')[0]}.` : '';
    const indexes = POSTGRES_INDEXES.map((suffix) => `${schema}${base}_${suffix}`);
    // With everything in place no DDL runs: ALTER TABLE and CREATE INDEX lock the table even
    // when there is nothing to do, and a replica starting beside busy ones would wait on (or
    // deadlock with) their writes. This check is a catalog read.
    const inspect = async (executor: SqlExecutor): Promise<{ complete: boolean; partitioned: boolean }> => {
      const [present] = await executor.query(
        `SELECT (SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped) AS columns,
                (SELECT count(*)::int FROM json_array_elements_text($2::json) AS name WHERE to_regclass(name) IS NOT NULL) AS indexes,
                (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)) AS kind`,
        [table, JSON.stringify(indexes)],
      );
      const columns = new Set((present?.['columns'] as string[] | null) ?? []);
      return {
        complete: present?.['indexes'] === indexes.length && ADDED_COLUMNS.every(([column]) => columns.has(column)),
        partitioned: present?.['kind'] === 'p',
      };
    };
    const before = await inspect(driver);
    if (before.complete) return { partitioned: before.partitioned };
    return driver.transaction(async (tx) => {
      // Replicas starting together would race on CREATE … IF NOT EXISTS; one at a time.
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`aigateway:${table}`]);
      // A new table is partitioned by day, so retention drops whole days; a table made by an
      // earlier release (one plain table) is kept as it is and keeps working (docs/operations.md).
      await tx.query(`
        CREATE TABLE IF NOT EXISTS ${table} (
          id text COLLATE "C" NOT NULL,
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
          error_code text,
          PRIMARY KEY (id, started_at)
        ) PARTITION BY RANGE (started_at)`);
      const { partitioned } = await inspect(tx);
      // Rows outside every day's partition (a clock far off, records from long ago) land here.
      if (partitioned) await tx.query(`CREATE TABLE IF NOT EXISTS ${partitionName(table, 'default')} PARTITION OF ${table} DEFAULT`);
      for (const [column, type] of ADDED_COLUMNS) {
        await tx.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${POSTGRES_TYPES[type]}`);
      }
      await tx.query(`CREATE INDEX IF NOT EXISTS ${base}_started ON ${table} (started_at, id)`);
      await tx.query(`CREATE INDEX IF NOT EXISTS ${base}_trace ON ${table} (trace_id)`);
      await tx.query(`CREATE INDEX IF NOT EXISTS ${base}_provider_model ON ${table} (provider, model, started_at)`);
      await tx.query(`CREATE INDEX IF NOT EXISTS ${base}_metadata ON ${table} USING gin (metadata_flat jsonb_path_ops)`);
      return { partitioned };
    });
  },
};

/** A partition of `table` (same schema): `<name>_p20261126` for a day, `<name>_default`. */
function partitionName(table: string, suffix: string): string {
  const dot = table.indexOf('.');
  const schema = dot === -1 ? '' : table.slice(0, dot + 1);
  // 63 bytes is PostgreSQL's limit; the name is cut, never the suffix that says the day.
  return `${schema}${table.slice(dot + 1, dot + 1 + 52)}_${suffix}`;
}

export const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;
const dayTag = (ms: number): string => `p${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')}`;

/** The day a partition holds, from its `_pYYYYMMDD` name; undefined for the default one. */
function partitionDay(name: string): number | undefined {
  const match = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return match === null ? undefined : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
}

/** Creates the partitions of yesterday, today and the next days that do not exist yet. */
export async function ensurePartitions(driver: SqlDriver, table: string, nowMs: number): Promise<void> {
  const wanted: Array<{ name: string; from: number }> = [];
  for (let day = -1; day <= PARTITION_DAYS_AHEAD; day++) {
    const from = dayStart(nowMs) + day * DAY_MS;
    wanted.push({ name: partitionName(table, dayTag(from)), from });
  }
  const [row] = await driver.query(
    `SELECT array_agg(name) AS missing FROM json_array_elements_text($1::json) AS name WHERE to_regclass(name) IS NULL`,
    [JSON.stringify(wanted.map((partition) => partition.name))],
  );
  const missing = new Set((row?.['missing'] as string[] | null) ?? []);
  if (missing.size === 0) return;
  await driver.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`aigateway:${table}`]);
    // Attaching a partition locks the table briefly; never queue the writers behind a long wait.
    await tx.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
    for (const { name, from } of wanted) {
      if (!missing.has(name)) continue;
      const to = new Date(from + DAY_MS).toISOString();
      await tx.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${table} FOR VALUES FROM ('${new Date(from).toISOString()}') TO ('${to}')`);
    }
  });
}

/** Drops the day partitions that end at or before `cutoffMs`; returns the rows they held. */
export async function dropPartitionsBefore(driver: SqlDriver, table: string, cutoffMs: number): Promise<number> {
  const schema = table.includes('.') ? `${table.split('.')[0]}.` : '';
  const children = await driver.query(
    `SELECT c.relname::text AS name, c.reltuples::float8 AS estimate FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)`,
    [table],
  );
  let dropped = 0;
  for (const child of children) {
    const name = `${schema}${String(child['name'])}`;
    const day = partitionDay(name);
    if (day === undefined || day + DAY_MS > cutoffMs) continue;
    const estimate = Number(child['estimate']);
    // Counting a busy day's partition would read all of it: past a size, pg's estimate will do.
    if (estimate >= 0 && estimate > EXACT_COUNT_LIMIT) dropped += Math.round(estimate);
    else dropped += num((await driver.query(`SELECT count(*)::int AS n FROM ${name}`))[0]?.['n'] ?? 0);
    await driver.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
      await tx.query(`DROP TABLE IF EXISTS ${name}`);
    });
  }
  return dropped;
}

export const DIALECTS: Record<SqlDialect, Dialect> = { sqlite: SQLITE, postgres: POSTGRES };
