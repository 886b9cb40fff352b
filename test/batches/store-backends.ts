// The two SQL backends of the batch and file stores, for the shared suites: SQLite in a
// temporary directory, and PostgreSQL (127.0.0.1:5432, database `test`) in a schema of its
// own per run, dropped afterwards. PostgreSQL is skipped, with the reason, when unreachable.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresDriver } from '../../proxy/sql/postgres-driver.ts';
import type { SqlDriver } from '../../proxy/sql/sql-driver.ts';
import { SqliteDriver } from '../../proxy/sql/sqlite-driver.ts';

export const POSTGRES_URL = process.env['AIGW_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** Why the backend cannot run here, or undefined. */
  readonly unavailable: string | undefined;
  /** A new empty database (connection string or file) and its cleanup. */
  provision(): Promise<ProvisionedDatabase>;
}

export interface ProvisionedDatabase {
  /** SQLite: a file path; PostgreSQL: a connection string selecting the run's schema. */
  readonly location: string;
  connect(): SqlDriver;
  cleanup(): Promise<void>;
}

export async function sqliteBackend(): Promise<Backend> {
  return {
    name: 'sqlite',
    unavailable: undefined,
    async provision() {
      const dir = await mkdtemp(join(tmpdir(), 'aigw-batches-'));
      const location = join(dir, 'batches.sqlite');
      return { location, connect: () => new SqliteDriver(location), cleanup: () => rm(dir, { recursive: true, force: true }) };
    },
  };
}

export async function postgresBackend(): Promise<Backend> {
  const unavailable = await postgresUnavailable();
  return {
    name: 'postgres',
    unavailable,
    async provision() {
      const schema = `aigw_test_${randomBytes(6).toString('hex')}`;
      await adminQuery(`CREATE SCHEMA ${schema}`);
      const location = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      return {
        location,
        connect: () => new PostgresDriver({ connectionString: location }),
        cleanup: async () => {
          await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        },
      };
    },
  };
}

/** Runs one statement on the test database's default schema. */
export async function adminQuery(sql: string, connectionString = POSTGRES_URL): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2_000 });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

async function postgresUnavailable(): Promise<string | undefined> {
  try {
    await adminQuery('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${POSTGRES_URL} is not reachable (${(error as Error).message})`;
  }
}
