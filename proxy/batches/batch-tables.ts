import type { SqlDialect, SqlDriver } from '../sql/sql-driver.ts';

// The tables of gateway-managed files and batches, one DDL for both dialects. Created on
// start when missing; on PostgreSQL under an advisory lock, so replicas starting together
// do not race each other's CREATE TABLE. When every table and index is already there no DDL
// runs at all: `CREATE INDEX IF NOT EXISTS` still locks its table, and a replica starting
// beside busy ones would deadlock with their transactions.

const DDL_LOCK_KEY = 7_420_431_1;

function statements(dialect: SqlDialect): string[] {
  const blob = dialect === 'sqlite' ? 'BLOB' : 'BYTEA';
  return [
    `CREATE TABLE IF NOT EXISTS aigw_files (
      id TEXT PRIMARY KEY,
      workspace TEXT NOT NULL,
      purpose TEXT NOT NULL,
      filename TEXT NOT NULL,
      bytes BIGINT NOT NULL,
      created_at BIGINT NOT NULL,
      created_ms BIGINT NOT NULL,
      status TEXT NOT NULL
    )`,
    'CREATE INDEX IF NOT EXISTS aigw_files_listing ON aigw_files (workspace, created_ms, id)',
    `CREATE TABLE IF NOT EXISTS aigw_file_chunks (
      file_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      data ${blob} NOT NULL,
      PRIMARY KEY (file_id, seq)
    )`,
    `CREATE TABLE IF NOT EXISTS aigw_batches (
      id TEXT PRIMARY KEY,
      workspace TEXT NOT NULL,
      endpoint TEXT NOT NULL,
      input_file_id TEXT NOT NULL,
      completion_window TEXT NOT NULL,
      status TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      created_ms BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      in_progress_at BIGINT,
      finalizing_at BIGINT,
      completed_at BIGINT,
      failed_at BIGINT,
      expired_at BIGINT,
      cancelling_at BIGINT,
      cancelled_at BIGINT,
      total INTEGER NOT NULL DEFAULT 0,
      completed INTEGER NOT NULL DEFAULT 0,
      failed INTEGER NOT NULL DEFAULT 0,
      metadata TEXT,
      errors TEXT,
      output_file_id TEXT,
      error_file_id TEXT,
      headers TEXT NOT NULL
    )`,
    'CREATE INDEX IF NOT EXISTS aigw_batches_listing ON aigw_batches (workspace, created_ms, id)',
    'CREATE INDEX IF NOT EXISTS aigw_batches_status ON aigw_batches (status)',
    `CREATE TABLE IF NOT EXISTS aigw_batch_lines (
      batch_id TEXT NOT NULL,
      line_no INTEGER NOT NULL,
      custom_id TEXT NOT NULL,
      request TEXT NOT NULL,
      status TEXT NOT NULL,
      worker TEXT,
      claimed_ms BIGINT,
      result TEXT,
      PRIMARY KEY (batch_id, line_no)
    )`,
    'CREATE INDEX IF NOT EXISTS aigw_batch_lines_status ON aigw_batch_lines (status, batch_id, line_no)',
    `CREATE TABLE IF NOT EXISTS aigw_batch_workers (
      id TEXT PRIMARY KEY,
      heartbeat_ms BIGINT NOT NULL
    )`,
  ];
}

/** Creates the tables that are missing. */
export async function ensureBatchTables(driver: SqlDriver): Promise<void> {
  if (driver.dialect === 'sqlite') {
    await driver.exec(statements('sqlite').join(';\n'));
    return;
  }
  if (await schemaInPlace(driver)) return;
  await driver.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(${DDL_LOCK_KEY})`);
    for (const statement of statements('postgres')) await tx.query(statement);
  });
}

/** True when every relation the DDL creates exists (a catalog read: no table locks). */
async function schemaInPlace(driver: SqlDriver): Promise<boolean> {
  const names = statements('postgres').map((statement) => /(?:TABLE|INDEX) IF NOT EXISTS (\w+)/.exec(statement)?.[1]).filter((name) => name !== undefined);
  const rows = await driver.query(`SELECT count(*) AS n FROM json_array_elements_text($1::json) AS name WHERE to_regclass(name) IS NOT NULL`, [
    JSON.stringify(names),
  ]);
  return Number(rows[0]?.['n']) === names.length;
}
