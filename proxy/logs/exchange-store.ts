import type { Logger } from 'pino';
import type { RequestExchange } from '../observability/request-exchange.ts';
import { num, str, type SqlDriver } from '../sql/sql-driver.ts';

// Where captured headers and bodies (serve --log-bodies) are kept: a table of their own beside
// the request log, keyed by the record's id, written by a bounded queue of its own so the
// request log's writer and its statements stay as they are. Standalone a SQLite file of its
// own (request-log-exchanges.sqlite); in a cluster the log's PostgreSQL database. Retention
// follows the log's.

export interface StoredExchange extends RequestExchange {
  readonly id: string;
  readonly startedAt: number;
}

export const EXCHANGE_TABLE = 'request_log_exchanges';

/** Most exchanges waiting to be written, and their bytes: past either a new one is dropped (counted). */
const MAX_QUEUED = 5_000;
const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
const BATCH = 200;
const FLUSH_MS = 500;
const DELETE_CHUNK = 5_000;
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

export class ExchangeStore {
  readonly #driver: SqlDriver;
  readonly #logger: Logger;
  readonly #table: string;
  #queue: StoredExchange[] = [];
  #queuedBytes = 0;
  #dropped = 0;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;

  private constructor(driver: SqlDriver, logger: Logger, table: string) {
    this.#driver = driver;
    this.#logger = logger;
    this.#table = table;
  }

  /** Creates the table if it is missing; `table` may be schema-qualified (default request_log_exchanges). */
  static async open(driver: SqlDriver, logger: Logger, options: { table?: string } = {}): Promise<ExchangeStore> {
    const table = options.table ?? EXCHANGE_TABLE;
    if (!IDENTIFIER.test(table)) throw new RangeError(`not a table name: ${JSON.stringify(table)}`);
    const bigint = driver.dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
    await driver.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, started_at ${bigint} NOT NULL, exchange TEXT NOT NULL);` +
        `CREATE INDEX IF NOT EXISTS ${table.replace('.', '_')}_started_at ON ${table} (started_at);`,
    );
    return new ExchangeStore(driver, logger, table);
  }

  /** Queues one exchange; never waits (a full queue drops it, counted in `dropped`). */
  add(exchange: StoredExchange): void {
    if (this.#closed) return;
    const bytes = (exchange.requestBody?.text.length ?? 0) + (exchange.responseBody?.text.length ?? 0) + 2_048;
    if (this.#queue.length >= MAX_QUEUED || this.#queuedBytes + bytes > MAX_QUEUED_BYTES) {
      if (this.#dropped++ % 1_000 === 0) this.#logger.warn({ dropped: this.#dropped }, 'request exchange queue full: headers and bodies dropped (the records are kept)');
      return;
    }
    this.#queue.push(exchange);
    this.#queuedBytes += bytes;
    if (this.#queue.length >= BATCH) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  get dropped(): number {
    return this.#dropped;
  }

  /** Writes what is queued (one transaction per batch); resolves once written. */
  async flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#flushing !== undefined) await this.#flushing;
    if (this.#queue.length === 0) return;
    const batch = this.#queue.splice(0, BATCH);
    this.#flushing = this.#write(batch).finally(() => {
      this.#flushing = undefined;
    });
    await this.#flushing;
    if (this.#queue.length > 0) await this.flush();
  }

  async #write(batch: StoredExchange[]): Promise<void> {
    const bytes = batch.reduce((sum, item) => sum + (item.requestBody?.text.length ?? 0) + (item.responseBody?.text.length ?? 0) + 2_048, 0);
    try {
      await this.#driver.transaction(async (tx) => {
        for (const item of batch) {
          const { id, startedAt, ...rest } = item;
          await tx.query(`INSERT INTO ${this.#table} (id, started_at, exchange) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, [id, startedAt, JSON.stringify(rest)]);
        }
      });
    } catch (error) {
      this.#dropped += batch.length;
      this.#logger.error({ err: { message: (error as Error).message }, dropped: batch.length }, 'request exchanges not written');
    } finally {
      this.#queuedBytes -= bytes;
    }
  }

  async get(id: string): Promise<StoredExchange | undefined> {
    const rows = await this.#driver.query(`SELECT id, started_at, exchange FROM ${this.#table} WHERE id = $1`, [id]);
    const row = rows[0];
    if (row === undefined) return undefined;
    return { id: str(row['id']), startedAt: num(row['started_at']), ...(JSON.parse(str(row['exchange'])) as RequestExchange) };
  }

  /** Deletes exchanges of requests that started before `cutoffMs`, in chunks; returns how many. */
  async deleteOlderThan(cutoffMs: number): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.#driver.query(
        `DELETE FROM ${this.#table} WHERE id IN (SELECT id FROM ${this.#table} WHERE started_at < $1 LIMIT ${DELETE_CHUNK}) RETURNING id`,
        [cutoffMs],
      );
      total += rows.length;
      if (rows.length < DELETE_CHUNK) return total;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    await this.#driver.close();
  }
}
