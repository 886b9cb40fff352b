import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { openSqliteDatabase, type SqliteOpenOptions } from './sqlite-database.ts';
import type { SqlDriver, SqlExecutor, SqlRow, SqlValue } from './sql-driver.ts';

// node:sqlite behind the SqlDriver interface. The database API is synchronous, but a
// transaction's work is async (it awaits the executor): a promise-chain mutex keeps every
// other statement out while a transaction is open, so interleaved callers never run
// inside someone else's transaction.

const PLACEHOLDER = /\$(\d+)/g;

export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  /** The database file (its directory holds the standalone secret key). */
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  #lock: Promise<void> = Promise.resolve();

  /**
   * Opens (creating, mode 0600) the database file; WAL so readers never block the writer.
   * By default (batches and files) foreign keys are enforced and secure_delete zeroes deleted
   * and overwritten rows instead of leaving them in free pages (sealed credentials).
   */
  constructor(path: string, options: SqliteOpenOptions = { foreignKeys: true, secureDelete: true }) {
    this.path = path;
    this.#db = openSqliteDatabase(path, options);
  }

  purgeJournal(): Promise<void> {
    return this.#exclusive(async () => {
      this.#db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    });
  }

  query(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
    return this.#exclusive(async () => this.#run(sql, params));
  }

  exec(sql: string): Promise<void> {
    return this.#exclusive(async () => {
      this.#db.exec(sql);
    });
  }

  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#exclusive(async () => {
      this.#db.exec('BEGIN IMMEDIATE');
      let open = true;
      const tx: SqlExecutor = {
        query: async (sql, params = []) => {
          if (!open) throw new Error('transaction is finished');
          return this.#run(sql, params);
        },
      };
      try {
        const result = await work(tx);
        this.#db.exec('COMMIT');
        return result;
      } catch (error) {
        this.#db.exec('ROLLBACK');
        throw error;
      } finally {
        open = false;
      }
    });
  }

  /**
   * Runs one statement once per row of parameters in one transaction (committed, or rolled
   * back when a row fails): a synchronous loop, without the promise per row of
   * transaction()'s executor (the request log's batches: 200 rows, issue 32).
   */
  runBatch(sql: string, rows: ReadonlyArray<readonly SqlValue[]>): Promise<void> {
    return this.#exclusive(async () => {
      const statement = this.#prepared(sql);
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        for (const row of rows) statement.run(...(row as SQLInputValue[]));
        this.#db.exec('COMMIT');
      } catch (error) {
        this.#db.exec('ROLLBACK');
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    await this.#exclusive(async () => {
      this.#statements.clear();
      if (this.#db.isOpen) this.#db.close();
    });
  }

  #run(sql: string, params: readonly SqlValue[]): SqlRow[] {
    return this.#prepared(sql).all(...(params as SQLInputValue[])) as SqlRow[];
  }

  #prepared(sql: string): ReturnType<DatabaseSync['prepare']> {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql.replace(PLACEHOLDER, '?$1'));
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(work);
    this.#lock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
}
