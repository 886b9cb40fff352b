import type pg from 'pg';
import { leasePostgresPool, type PostgresPoolLease } from './postgres-pool.ts';
import type { SqlDriver, SqlExecutor, SqlRow, SqlValue } from './sql-driver.ts';

// PostgreSQL behind the SqlDriver interface, on the pool shared per database URL
// (postgres-pool.ts); a transaction holds one client from BEGIN to COMMIT. Several replicas
// share the database, so work is claimed with row locks (FOR UPDATE SKIP LOCKED) inside
// these transactions.

export interface PostgresDriverOptions {
  /** postgres://user@host:5432/db — `?options=-c search_path=<schema>` selects a schema. */
  readonly connectionString: string;
}

export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly #lease: PostgresPoolLease;
  #closed = false;

  constructor(options: PostgresDriverOptions) {
    this.#lease = leasePostgresPool(options.connectionString);
  }

  async query(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
    const result = await this.#pool().query(sql, params as SqlValue[]);
    return result.rows as SqlRow[];
  }

  async exec(sql: string): Promise<void> {
    await this.#pool().query(sql);
  }

  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.#pool().connect();
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

  /** Releases this driver's lease; the pool ends when its last user closes. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#lease.release();
  }

  /** The shared pool, refused once this driver is closed (as its own pool's end did). */
  #pool(): pg.Pool {
    if (this.#closed) throw new Error('the PostgreSQL driver is closed');
    return this.#lease.pool;
  }
}
