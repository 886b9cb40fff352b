import { newGatewayFileId } from '../files/file-store.ts';
import { insertFileChunk } from '../files/sql-file-store.ts';
import { forUpdate, num, str, strOrNull, type SqlDialect, type SqlExecutor } from '../sql/sql-driver.ts';

// The end of a gateway-managed batch, in one transaction: re-read the batch under its
// row lock, write the output file (lines that got a 2xx answer) and the error file (the
// rest) in line order, and move to completed / cancelled / expired. Two replicas that
// both try serialise on the lock; the second finds the batch already ended. A crash
// mid-way rolls everything back and the next pass starts over.

const PAGE = 500;

/** Returns true when this call ended the batch. */
export async function finalizeBatch(tx: SqlExecutor, dialect: SqlDialect, batchId: string, nowMs: number, chunkBytes: number): Promise<boolean> {
  const rows = await tx.query(`SELECT status, workspace, expires_at FROM aigw_batches WHERE id = $1${forUpdate(dialect)}`, [batchId]);
  const batch = rows[0];
  if (batch === undefined) return false;
  const status = str(batch['status']);
  const nowS = Math.floor(nowMs / 1000);
  let final: 'completed' | 'cancelled' | 'expired';
  if (status === 'finalizing') final = 'completed';
  else if (status === 'cancelling') final = 'cancelled';
  else if (status === 'in_progress' && num(batch['expires_at']) <= nowS) final = 'expired';
  else return false;
  const running = await tx.query(`SELECT 1 AS one FROM aigw_batch_lines WHERE batch_id = $1 AND status = 'running' LIMIT 1`, [batchId]);
  if (running.length > 0) return false;

  const workspace = str(batch['workspace']);
  const output = new ChunkedFileWriter(tx, chunkBytes);
  const errors = new ChunkedFileWriter(tx, chunkBytes);
  let after = 0;
  for (;;) {
    const page = await tx.query(
      `SELECT line_no, status, result FROM aigw_batch_lines
       WHERE batch_id = $1 AND line_no > $2 AND status IN ('succeeded', 'failed') ORDER BY line_no LIMIT ${PAGE}`,
      [batchId, after],
    );
    for (const line of page) {
      const text = strOrNull(line['result']);
      if (text !== null) await (line['status'] === 'succeeded' ? output : errors).append(`${text}\n`);
    }
    const last = page.at(-1);
    if (last === undefined || page.length < PAGE) break;
    after = num(last['line_no']);
  }
  const outputFileId = await output.finish(workspace, `${batchId}_output.jsonl`, nowMs);
  const errorFileId = await errors.finish(workspace, `${batchId}_error.jsonl`, nowMs);
  await tx.query(
    // The creator's credentials are wiped with the end of the batch (the store then purges the journal).
    `UPDATE aigw_batches SET status = $2, ${final}_at = $3, output_file_id = $4, error_file_id = $5, headers = '' WHERE id = $1`,
    [batchId, final, nowS, outputFileId, errorFileId],
  );
  return true;
}

/** Appends text, writing a chunk row each time `chunkBytes` accumulate. */
class ChunkedFileWriter {
  readonly #tx: SqlExecutor;
  readonly #chunkBytes: number;
  readonly #id = newGatewayFileId();
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #seq = 0;
  #total = 0;

  constructor(tx: SqlExecutor, chunkBytes: number) {
    this.#tx = tx;
    this.#chunkBytes = chunkBytes;
  }

  async append(text: string): Promise<void> {
    const data = Buffer.from(text, 'utf8');
    this.#pending.push(data);
    this.#pendingBytes += data.length;
    this.#total += data.length;
    if (this.#pendingBytes >= this.#chunkBytes) await this.#flush();
  }

  /** Writes the file row; undefined (no file) when nothing was written. */
  async finish(workspace: string, filename: string, nowMs: number): Promise<string | null> {
    if (this.#total === 0) return null;
    await this.#flush();
    await this.#tx.query(
      `INSERT INTO aigw_files (id, workspace, purpose, filename, bytes, created_at, created_ms, status)
       VALUES ($1, $2, 'batch_output', $3, $4, $5, $6, 'processed')`,
      [this.#id, workspace, filename, this.#total, Math.floor(nowMs / 1000), nowMs],
    );
    return this.#id;
  }

  async #flush(): Promise<void> {
    if (this.#pendingBytes === 0) return;
    const data = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    await insertFileChunk(this.#tx, this.#id, this.#seq++, data);
  }
}
