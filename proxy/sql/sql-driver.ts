// The gateway's one SQL layer (proxy/sql): the little surface the batch, file and request-log
// stores need, so each store is written once and runs on SQLite (standalone) and PostgreSQL
// (replicas, one shared pool: postgres-pool.ts). Statements are written once with
// PostgreSQL's `$1` placeholders; the SQLite driver rewrites them to `?1`.

export type SqlDialect = 'sqlite' | 'postgres';

/** A SQL value as the stores bind it; an array only on PostgreSQL (`unnest($1::text[])`). */
export type SqlValue = string | number | bigint | null | Buffer | readonly SqlValue[];

export type SqlRow = Record<string, unknown>;

/** Runs statements: the driver itself, or the handle of an open transaction. */
export interface SqlExecutor {
  query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: SqlDialect;
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * SQLite transactions are exclusive (the whole database); PostgreSQL ones rely on row
   * locks taken with the `lockRows` suffix.
   */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Runs several `;`-separated statements (DDL). */
  exec(sql: string): Promise<void>;
  /**
   * After values were wiped: moves what the journal still holds of them out of it (SQLite:
   * checkpoint and truncate the WAL). PostgreSQL has nothing the gateway can force.
   */
  purgeJournal(): Promise<void>;
  close(): Promise<void>;
}

/** `FOR UPDATE SKIP LOCKED` where row locks exist; nothing on SQLite (its writer lock serialises). */
export function skipLocked(dialect: SqlDialect, table?: string): string {
  if (dialect === 'sqlite') return '';
  return table === undefined ? ' FOR UPDATE SKIP LOCKED' : ` FOR UPDATE OF ${table} SKIP LOCKED`;
}

/** `FOR UPDATE` on PostgreSQL; nothing on SQLite. */
export function forUpdate(dialect: SqlDialect): string {
  return dialect === 'sqlite' ? '' : ' FOR UPDATE';
}

/** A column read back as a number (PostgreSQL returns BIGINT as a string). */
export function num(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' || typeof value === 'string') return Number(value);
  throw new TypeError(`expected a number column, got ${typeof value}`);
}

export function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : num(value);
}

export function str(value: unknown): string {
  if (typeof value === 'string') return value;
  throw new TypeError(`expected a text column, got ${typeof value}`);
}

export function strOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : str(value);
}

/** A BLOB/BYTEA column as a Buffer (SQLite returns Uint8Array, pg a Buffer). */
export function bytes(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError('expected a binary column');
}
