import pg from 'pg';

// One pg.Pool per database URL, shared by every store that asks for it (request logs,
// files and batches all use DATABASE_URL): one set of connections and one place for the
// connection policy. Each store leases the pool and releases it on close; the last
// release ends the pool.

/** The two stores' former pools together (logs 4, batches and files 8). */
const MAX_CONNECTIONS = 12;

interface SharedPool {
  readonly pool: pg.Pool;
  users: number;
}

const pools = new Map<string, SharedPool>();

export interface PostgresPoolLease {
  readonly pool: pg.Pool;
  /** Gives the pool back; the last lease released ends it. Idempotent. */
  release(): Promise<void>;
}

/** The pool for `connectionString` (postgres://user@host:5432/db, `?options=-c search_path=<schema>` selects a schema). */
export function leasePostgresPool(connectionString: string): PostgresPoolLease {
  let shared = pools.get(connectionString);
  if (shared === undefined) {
    const pool = new pg.Pool({
      connectionString,
      max: MAX_CONNECTIONS,
      connectionTimeoutMillis: 5_000,
      // Reads from the API must not hold a connection for ever.
      statement_timeout: 30_000,
      // The same bound on our side: a server cut off mid-query (no FIN, no RST) would
      // otherwise leave the query, and the request log writer behind it, waiting for ever.
      query_timeout: 35_000,
      // Detects a dead peer on idle pooled connections.
      keepAlive: true,
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on('error', () => undefined);
    shared = { pool, users: 0 };
    pools.set(connectionString, shared);
  }
  const entry = shared;
  entry.users++;
  let released = false;
  return {
    pool: entry.pool,
    async release() {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users > 0) return;
      if (pools.get(connectionString) === entry) pools.delete(connectionString);
      await entry.pool.end();
    },
  };
}
