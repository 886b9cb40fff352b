import type { RequestRecord } from '../observability/request-record.ts';
import { num, type SqlDriver, type SqlValue } from '../sql/sql-driver.ts';
import {
  EMPTY_STATS,
  pageStatement,
  recordFromRow,
  rowOf,
  statsFromRow,
  summaryStatement,
  valuesOf,
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
import { dayStart, DELETE_CHUNK, DIALECTS, dropPartitionsBefore, ensurePartitions, IDENTIFIER, PARTITION_CHECK_MS, type Dialect } from './sql-log-dialects.ts';

// The request log store, once, on the gateway's SQL driver (proxy/sql): PostgreSQL in a
// cluster (one table every replica writes, on the pool shared with files and batches), SQLite
// standalone — there inside its worker thread (sqlite-log-store.ts), because a commit can wait
// on the disk for tens of ms. What differs per database is sql-log-dialects.ts's (DIALECTS); the
// statements themselves are log-sql.ts's.
//
//   const store = await SqlLogStore.open(new PostgresDriver({ connectionString }), { table: 'logs.request_logs' });

export interface SqlLogStoreOptions {
  /** Table, optionally schema-qualified (`logs.request_logs`). Default per dialect. */
  readonly table?: string;
  /** The clock partitions are made ahead of (PostgreSQL). Default Date.now. */
  readonly now?: () => number;
}
export class SqlLogStore implements RequestLogStore {
  readonly #driver: SqlDriver;
  readonly #dialect: Dialect;
  readonly #table: string;
  readonly #now: () => number;
  /** Partitioned by day (a PostgreSQL table this release created); retention drops partitions. */
  readonly partitioned: boolean;
  readonly #partitionTimer: NodeJS.Timeout | undefined;
  #partitionCheck: Promise<void> | undefined;
  #closed = false;

  private constructor(driver: SqlDriver, table: string, partitioned: boolean, now: () => number) {
    this.#driver = driver;
    this.#dialect = DIALECTS[driver.dialect];
    this.#table = table;
    this.partitioned = partitioned;
    this.#now = now;
    if (partitioned) {
      // Failures are harmless (rows land in the default partition) and retried next hour.
      this.#partitionTimer = setInterval(() => void this.ensurePartitions().catch(() => undefined), PARTITION_CHECK_MS);
      this.#partitionTimer.unref();
    }
  }

  /**
   * Creates the table and indexes when missing, on `driver`, which the store then owns
   * (closed with it, or at once when opening fails).
   */
  static async open(driver: SqlDriver, options: SqlLogStoreOptions = {}): Promise<SqlLogStore> {
    const table = options.table ?? DIALECTS[driver.dialect].defaultTable;
    const now = options.now ?? Date.now;
    let partitioned: boolean;
    try {
      if (!IDENTIFIER.test(table)) throw new RangeError(`invalid request log table name "${table}"`);
      ({ partitioned } = await DIALECTS[driver.dialect].createSchema(driver, table));
      // Not fatal: a replica starting beside busy ones may not get the lock in time; rows land
      // in the default partition meanwhile, and the hourly check tries again.
      if (partitioned) await ensurePartitions(driver, table, now()).catch(() => undefined);
    } catch (error) {
      await driver.close().catch(() => undefined);
      throw error;
    }
    return new SqlLogStore(driver, table, partitioned, now);
  }

  /** Makes sure the partitions of yesterday to a few days ahead exist (a no-op when not partitioned). */
  ensurePartitions(): Promise<void> {
    if (!this.partitioned || this.#closed) return Promise.resolve();
    this.#partitionCheck ??= ensurePartitions(this.#open(), this.#table, this.#now()).finally(() => {
      this.#partitionCheck = undefined;
    });
    return this.#partitionCheck;
  }

  /** Partitioned: retention keeps whole days, so a pass drops partitions instead of deleting rows. */
  retentionCutoff(cutoffMs: number): number {
    return this.partitioned ? dayStart(cutoffMs) : cutoffMs;
  }

  async insertMany(records: readonly RequestRecord[]): Promise<void> {
    await this.insertValues(records.map((record) => valuesOf(rowOf(record))));
  }

  /** Rows already in their stored form: each valuesOf(rowOf(record)) (the SQLite worker's log-batch-rows.ts). */
  async insertValues(rows: ReadonlyArray<readonly unknown[]>): Promise<void> {
    if (rows.length === 0) return;
    await this.#dialect.insert(this.#open(), this.#table, rows);
  }

  async query(filter: LogFilter, after: string | undefined, limit: number): Promise<LogPage> {
    const driver = this.#open();
    let cursor: { startedAt: number; id: string } | undefined;
    if (after !== undefined) {
      const [row] = await driver.query(`SELECT ${this.#dialect.selectList} FROM ${this.#table} WHERE id = $1`, [after]);
      if (row === undefined) throw new RequestLogCursorError(after);
      cursor = { startedAt: num(row['started_at']), id: after };
    }
    const statement = pageStatement(this.#table, this.#dialect.selectList, filter, cursor, limit, this.#dialect.syntax);
    const rows = await driver.query(statement.sql, statement.values as SqlValue[]);
    const records = rows.slice(0, limit).map(recordFromRow);
    const hasMore = rows.length > limit;
    return { records, hasMore, nextCursor: hasMore ? records.at(-1)?.id : undefined };
  }

  async get(id: string): Promise<RequestRecord | undefined> {
    const [row] = await this.#open().query(`SELECT ${this.#dialect.selectList} FROM ${this.#table} WHERE id = $1`, [id]);
    return row === undefined ? undefined : recordFromRow(row);
  }

  async summary(filter: LogFilter, groupBy: SummaryGroupBy | undefined): Promise<AnalyticsSummary> {
    const driver = this.#open();
    const run = async (by: SummaryGroupBy | undefined): Promise<SummaryRow[]> => {
      const statement = summaryStatement(this.#table, filter, by, this.#dialect.syntax);
      return (await driver.query(statement.sql, statement.values as SqlValue[])) as SummaryRow[];
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

  /**
   * Partitioned: drops the day partitions wholly before the cutoff (no row by row delete),
   * then deletes what is left before it (the default partition, a part of the cutoff's day)
   * in chunks, each its own statement, so no retention pass holds a long transaction.
   */
  async deleteOlderThan(cutoffMs: number): Promise<number> {
    const driver = this.#open();
    let deleted = 0;
    if (this.partitioned) {
      await this.ensurePartitions().catch(() => undefined);
      deleted += await dropPartitionsBefore(driver, this.#table, cutoffMs);
    }
    for (;;) {
      const rows = await driver.query(
        // Partitioned, the key is (id, started_at): the pair finds each row in its partition.
        this.partitioned
          ? `DELETE FROM ${this.#table} WHERE (id, started_at) IN (SELECT id, started_at FROM ${this.#table} WHERE started_at < $1 LIMIT ${DELETE_CHUNK}) RETURNING 1 AS gone`
          : `DELETE FROM ${this.#table} WHERE id IN (SELECT id FROM ${this.#table} WHERE started_at < $1 LIMIT ${DELETE_CHUNK}) RETURNING 1 AS gone`,
        [this.#dialect.bindTime(cutoffMs)],
      );
      deleted += rows.length;
      if (rows.length < DELETE_CHUNK) return deleted;
    }
  }

  /** Closes the driver (a PostgreSQL driver gives back its lease of the shared pool). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#partitionTimer);
    await this.#partitionCheck?.catch(() => undefined);
    await this.#driver.close();
  }

  #open(): SqlDriver {
    if (this.#closed) throw new Error('request log store closed');
    return this.#driver;
  }
}
