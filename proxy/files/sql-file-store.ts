import { bytes, num, str, type SqlDriver, type SqlExecutor } from '../sql/sql-driver.ts';
import type { FileListQuery, FileRecord, FileStore, NewUpload, Page } from './file-store.ts';

// FileStore on SQLite or PostgreSQL (tables in batches/batch-tables.ts). A file row is
// `uploading` until its last chunk is written; only `processed` files are visible.

const COLUMNS = 'id, workspace, purpose, filename, bytes, created_at';

export class SqlFileStore implements FileStore {
  readonly #db: SqlDriver;

  constructor(driver: SqlDriver) {
    this.#db = driver;
  }

  async beginUpload(upload: NewUpload): Promise<void> {
    await this.#db.query(
      `INSERT INTO aigw_files (id, workspace, purpose, filename, bytes, created_at, created_ms, status)
       VALUES ($1, $2, '', '', 0, $3, $4, 'uploading')`,
      [upload.id, upload.workspace, Math.floor(upload.createdMs / 1000), upload.createdMs],
    );
  }

  async appendChunk(id: string, seq: number, data: Buffer): Promise<void> {
    await insertFileChunk(this.#db, id, seq, data);
  }

  async completeUpload(id: string, fields: { purpose: string; filename: string; bytes: number }): Promise<FileRecord> {
    const rows = await this.#db.query(
      `UPDATE aigw_files SET purpose = $2, filename = $3, bytes = $4, status = 'processed'
       WHERE id = $1 AND status = 'uploading' RETURNING ${COLUMNS}`,
      [id, fields.purpose, fields.filename, fields.bytes],
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`upload ${id} is not in progress`);
    return toRecord(row);
  }

  async abortUpload(id: string): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await tx.query('DELETE FROM aigw_file_chunks WHERE file_id = $1', [id]);
      await tx.query('DELETE FROM aigw_files WHERE id = $1', [id]);
    });
  }

  async get(workspace: string, id: string): Promise<FileRecord | undefined> {
    const rows = await this.#db.query(`SELECT ${COLUMNS} FROM aigw_files WHERE id = $1 AND workspace = $2 AND status = 'processed'`, [
      id,
      workspace,
    ]);
    return rows[0] === undefined ? undefined : toRecord(rows[0]);
  }

  async list(workspace: string, query: FileListQuery): Promise<Page<FileRecord>> {
    const params: Array<string | number> = [workspace, query.limit + 1];
    let where = `workspace = $1 AND status = 'processed'`;
    if (query.purpose !== undefined) {
      params.push(query.purpose);
      where += ` AND purpose = $${params.length}`;
    }
    if (query.after !== undefined) {
      params.push(query.after);
      const cursor = `(SELECT created_ms FROM aigw_files WHERE id = $${params.length})`;
      const op = query.order === 'desc' ? '<' : '>';
      where += ` AND (created_ms ${op} ${cursor} OR (created_ms = ${cursor} AND id ${op} $${params.length}))`;
    }
    const direction = query.order === 'desc' ? 'DESC' : 'ASC';
    const rows = await this.#db.query(
      `SELECT ${COLUMNS} FROM aigw_files WHERE ${where} ORDER BY created_ms ${direction}, id ${direction} LIMIT $2`,
      params,
    );
    return { items: rows.slice(0, query.limit).map(toRecord), hasMore: rows.length > query.limit };
  }

  async *readContent(id: string): AsyncIterable<Buffer> {
    yield* readFileChunks(this.#db, id);
  }

  async delete(workspace: string, id: string): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const rows = await tx.query(`DELETE FROM aigw_files WHERE id = $1 AND workspace = $2 AND status = 'processed' RETURNING id`, [
        id,
        workspace,
      ]);
      if (rows.length === 0) return false;
      await tx.query('DELETE FROM aigw_file_chunks WHERE file_id = $1', [id]);
      return true;
    });
  }
}

export async function insertFileChunk(db: SqlExecutor, id: string, seq: number, data: Buffer): Promise<void> {
  await db.query('INSERT INTO aigw_file_chunks (file_id, seq, data) VALUES ($1, $2, $3)', [id, seq, data]);
}

/** A file's chunks in order, one query per chunk so only one chunk is in memory at a time. */
export async function* readFileChunks(db: SqlExecutor, id: string): AsyncIterable<Buffer> {
  let seq = -1;
  for (;;) {
    const rows = await db.query('SELECT seq, data FROM aigw_file_chunks WHERE file_id = $1 AND seq > $2 ORDER BY seq LIMIT 1', [id, seq]);
    const row = rows[0];
    if (row === undefined) return;
    seq = num(row['seq']);
    yield bytes(row['data']);
  }
}

function toRecord(row: Record<string, unknown>): FileRecord {
  return {
    id: str(row['id']),
    workspace: str(row['workspace']),
    purpose: str(row['purpose']),
    filename: str(row['filename']),
    bytes: num(row['bytes']),
    createdAt: num(row['created_at']),
  };
}
