import pg from 'pg';
import type { SqlDriver, SqlExecutor, SqlRow, SqlValue } from './sql-driver.ts';

// PostgreSQL behind the SqlDriver interface: a small pool; a transaction holds one client
// from BEGIN to COMMIT. Several replicas share the database, so work is claimed with row
// locks (FOR UPDATE SKIP LOCKED) inside these transactions.

export interface PostgresDriverOptions {
  /** postgres://user@host:5432/db — `?options=-c search_path=<schema>` selects a schema. */
  readonly connectionString: string;
  readonly maxConnections?: number;
}

export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly #pool: pg.Pool;

  constructor(options: PostgresDriverOptions) {
    this.#pool = new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 8 });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    this.#pool.on('error', () => undefined);
  }

  async query(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
    const result = await this.#pool.query(sql, params as SqlValue[]);
    return result.rows as SqlRow[];
  }

  async exec(sql: string): Promise<void> {
    await this.#pool.query(sql);
  }

  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const tx: SqlExecutor = {
        query: async (sql, params = []) => (await client.query(sql, params as SqlValue[])).rows as SqlRow[],
      };
      const result = await work(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async purgeJournal(): Promise<void> {
    // Dead row versions go with autovacuum; the stored credentials are sealed anyway.
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
