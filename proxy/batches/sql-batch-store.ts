import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { FILE_CHUNK_BYTES, type Page } from '../files/file-store.ts';
import { readFileChunks } from '../files/sql-file-store.ts';
import { interruptedLine } from './batch-output.ts';
import { isInputError, JsonlLineSplitter, MAX_BATCH_LINES, MAX_REPORTED_ERRORS, parseBatchLine, type BatchInputError } from './batch-input.ts';
import type { BatchRecord, BatchStatus, BatchStore, CancelResult, ClaimedLine, LineOutcome, NewBatch } from './batch-store.ts';
import { BatchCredentialSeal, SECRET_KEY_ENV } from './batch-credential-seal.ts';
import { finalizeBatch } from './sql-batch-finalize.ts';
import { SqliteDriver } from '../sql/sqlite-driver.ts';
import { ensureBatchTables } from './batch-tables.ts';
import { num, numOrNull, skipLocked, str, strOrNull, type SqlDriver, type SqlExecutor, type SqlRow } from '../sql/sql-driver.ts';

// BatchStore on SQLite or PostgreSQL. Exactly-once per line, as far as the gateway
// controls it: a worker records a line as `running` under its id (committed) before
// sending it, and records the outcome only while that claim still holds. A line whose
// worker died mid-flight is failed as interrupted, never sent again. On PostgreSQL
// replicas claim lines with FOR UPDATE SKIP LOCKED, so no two take the same line.

const CANCELLABLE: readonly BatchStatus[] = ['validating', 'in_progress'];

export interface SqlBatchStoreOptions {
  /** Seals the creators' headers at rest; default: see `defaultCredentialSeal`. */
  readonly seal?: BatchCredentialSeal;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export class SqlBatchStore implements BatchStore {
  readonly #db: SqlDriver;
  readonly #seal: BatchCredentialSeal;

  private constructor(driver: SqlDriver, seal: BatchCredentialSeal) {
    this.#db = driver;
    this.#seal = seal;
  }

  /** Creates the tables when missing. The driver is shared with the file store; close() closes it. */
  static async open(driver: SqlDriver, options: SqlBatchStoreOptions = {}): Promise<SqlBatchStore> {
    const seal = options.seal ?? defaultCredentialSeal(driver, options.env ?? process.env);
    await ensureBatchTables(driver);
    return new SqlBatchStore(driver, seal);
  }

  async create(batch: NewBatch): Promise<BatchRecord> {
    await this.#db.query(
      `INSERT INTO aigw_batches (id, workspace, endpoint, input_file_id, completion_window, status, created_at, created_ms, expires_at, metadata, headers)
       VALUES ($1, $2, $3, $4, 'immediate', 'validating', $5, $6, $7, $8, $9)`,
      [
        batch.id,
        batch.workspace,
        batch.endpoint,
        batch.inputFileId,
        seconds(batch.createdMs),
        batch.createdMs,
        batch.expiresAt,
        batch.metadata === null ? null : JSON.stringify(batch.metadata),
        this.#seal.seal(batch.id, batch.headers),
      ],
    );
    const created = await this.get(batch.workspace, batch.id);
    if (created === undefined) throw new Error(`batch ${batch.id} vanished after insert`);
    return created;
  }

  async get(workspace: string, id: string): Promise<BatchRecord | undefined> {
    const rows = await this.#db.query('SELECT * FROM aigw_batches WHERE id = $1 AND workspace = $2', [id, workspace]);
    return rows[0] === undefined ? undefined : toRecord(rows[0]);
  }

  async list(workspace: string, query: { after: string | undefined; limit: number }): Promise<Page<BatchRecord>> {
    const params: Array<string | number> = [workspace, query.limit + 1];
    let where = 'workspace = $1';
    if (query.after !== undefined) {
      params.push(query.after);
      const cursor = '(SELECT created_ms FROM aigw_batches WHERE id = $3)';
      where += ` AND (created_ms < ${cursor} OR (created_ms = ${cursor} AND id < $3))`;
    }
    const rows = await this.#db.query(`SELECT * FROM aigw_batches WHERE ${where} ORDER BY created_ms DESC, id DESC LIMIT $2`, params);
    return { items: rows.slice(0, query.limit).map(toRecord), hasMore: rows.length > query.limit };
  }

  async cancel(workspace: string, id: string, nowMs: number): Promise<CancelResult> {
    const rows = await this.#db.query(
      `UPDATE aigw_batches SET status = 'cancelling', cancelling_at = $3
       WHERE id = $1 AND workspace = $2 AND status IN (${CANCELLABLE.map((s) => `'${s}'`).join(', ')}) RETURNING *`,
      [id, workspace, seconds(nowMs)],
    );
    if (rows[0] !== undefined) return { kind: 'cancelling', batch: toRecord(rows[0]) };
    const batch = await this.get(workspace, id);
    if (batch === undefined) return { kind: 'not-found' };
    if (batch.status === 'cancelling' || batch.status === 'cancelled') return { kind: 'cancelling', batch };
    return { kind: 'not-cancellable', batch };
  }

  async heartbeat(workerId: string, nowMs: number): Promise<void> {
    await this.#db.query(
      `INSERT INTO aigw_batch_workers (id, heartbeat_ms) VALUES ($1, $2)
       ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms`,
      [workerId, nowMs],
    );
  }

  async forgetOtherWorkers(workerId: string): Promise<void> {
    await this.#db.query('DELETE FROM aigw_batch_workers WHERE id <> $1', [workerId]);
  }

  async failOrphanedLines(cutoffMs: number, limit: number): Promise<number> {
    const orphans = await this.#db.query(
      `SELECT l.batch_id, l.line_no, l.custom_id, l.worker FROM aigw_batch_lines l
       WHERE l.status = 'running'
         AND NOT EXISTS (SELECT 1 FROM aigw_batch_workers w WHERE w.id = l.worker AND w.heartbeat_ms >= $1)
       LIMIT $2`,
      [cutoffMs, limit],
    );
    let failed = 0;
    for (const row of orphans) {
      const claimed = await this.#recordOutcome(str(row['worker']), str(row['batch_id']), num(row['line_no']), {
        succeeded: false,
        resultLine: interruptedLine(str(row['custom_id'])),
      });
      if (claimed) failed++;
    }
    return failed;
  }

  async validateNext(nowMs: number): Promise<string | undefined> {
    const dialect = this.#db.dialect;
    return this.#db.transaction(async (tx) => {
      const rows = await tx.query(
        `SELECT id, workspace, endpoint, input_file_id FROM aigw_batches WHERE status = 'validating' ORDER BY created_ms LIMIT 1${skipLocked(dialect)}`,
      );
      const batch = rows[0];
      if (batch === undefined) return undefined;
      const id = str(batch['id']);
      const result = await insertLines(tx, id, str(batch['workspace']), str(batch['input_file_id']), str(batch['endpoint']));
      if (result.errors.length === 0) {
        await tx.query(`UPDATE aigw_batches SET status = 'in_progress', in_progress_at = $2, total = $3 WHERE id = $1`, [
          id,
          seconds(nowMs),
          result.count,
        ]);
      } else {
        await tx.query('DELETE FROM aigw_batch_lines WHERE batch_id = $1', [id]);
        await tx.query(`UPDATE aigw_batches SET status = 'failed', failed_at = $2, errors = $3, headers = '' WHERE id = $1`, [
          id,
          seconds(nowMs),
          JSON.stringify(result.errors),
        ]);
      }
      return { id, failed: result.errors.length > 0 };
    }).then(async (validated) => {
      if (validated?.failed === true) await this.#db.purgeJournal(); // its credentials were just wiped
      return validated?.id;
    });
  }

  async claimLines(workerId: string, nowMs: number, limit: number): Promise<ClaimedLine[]> {
    if (limit <= 0) return [];
    const rows = await this.#db.query(
      `UPDATE aigw_batch_lines SET status = 'running', worker = $1, claimed_ms = $2
       WHERE (batch_id, line_no) IN (
         SELECT l.batch_id, l.line_no FROM aigw_batch_lines l JOIN aigw_batches b ON b.id = l.batch_id
         WHERE l.status = 'pending' AND b.status = 'in_progress' AND b.expires_at > $3
         ORDER BY b.created_ms, l.line_no LIMIT $4${skipLocked(this.#db.dialect, 'l')})
       RETURNING batch_id, line_no, custom_id, request`,
      [workerId, nowMs, seconds(nowMs), limit],
    );
    const headers = new Map<string, Record<string, string>>();
    const claimed: ClaimedLine[] = [];
    for (const row of rows) {
      const batchId = str(row['batch_id']);
      let batchHeaders = headers.get(batchId);
      if (batchHeaders === undefined) {
        const found = await this.#db.query('SELECT headers FROM aigw_batches WHERE id = $1', [batchId]);
        // A value this key cannot open (another replica's key): the line runs without the
        // creator's credentials and fails with the gateway's 401 in the error file.
        batchHeaders = this.#seal.open(batchId, str(found[0]?.['headers'] ?? '')) ?? {};
        headers.set(batchId, batchHeaders);
      }
      claimed.push({
        batchId,
        lineNo: num(row['line_no']),
        customId: str(row['custom_id']),
        request: JSON.parse(str(row['request'])) as ClaimedLine['request'],
        headers: batchHeaders,
      });
    }
    return claimed.sort((a, b) => a.lineNo - b.lineNo);
  }

  async releaseLine(workerId: string, line: ClaimedLine): Promise<void> {
    await this.#db.query(
      `UPDATE aigw_batch_lines SET status = 'pending', worker = NULL, claimed_ms = NULL
       WHERE batch_id = $1 AND line_no = $2 AND worker = $3 AND status = 'running'`,
      [line.batchId, line.lineNo, workerId],
    );
  }

  finishLine(workerId: string, line: ClaimedLine, outcome: LineOutcome): Promise<boolean> {
    return this.#recordOutcome(workerId, line.batchId, line.lineNo, outcome);
  }

  async finalizeReady(nowMs: number, limit: number): Promise<string[]> {
    const rows = await this.#db.query(
      `SELECT b.id, b.status FROM aigw_batches b
       WHERE b.status IN ('in_progress', 'finalizing', 'cancelling')
         AND NOT EXISTS (SELECT 1 FROM aigw_batch_lines l WHERE l.batch_id = b.id AND l.status = 'running')
         AND (b.status <> 'in_progress' OR b.expires_at <= $1
              OR NOT EXISTS (SELECT 1 FROM aigw_batch_lines l WHERE l.batch_id = b.id AND l.status = 'pending'))
       ORDER BY b.created_ms LIMIT $2`,
      [seconds(nowMs), limit],
    );
    const finished: string[] = [];
    for (const row of rows) {
      const id = str(row['id']);
      // Visible first: the batch is finalizing while its files are written.
      await this.#db.query(
        `UPDATE aigw_batches SET status = 'finalizing', finalizing_at = $2
         WHERE id = $1 AND status = 'in_progress' AND expires_at > $3
           AND NOT EXISTS (SELECT 1 FROM aigw_batch_lines l WHERE l.batch_id = $1 AND l.status IN ('pending', 'running'))`,
        [id, seconds(nowMs), seconds(nowMs)],
      );
      const done = await this.#db.transaction((tx) => finalizeBatch(tx, this.#db.dialect, id, nowMs, FILE_CHUNK_BYTES));
      if (done) finished.push(id);
    }
    if (finished.length > 0) await this.#db.purgeJournal(); // the ended batches' credentials were wiped
    return finished;
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  async #recordOutcome(workerId: string, batchId: string, lineNo: number, outcome: LineOutcome): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const updated = await tx.query(
        `UPDATE aigw_batch_lines SET status = $4, result = $5
         WHERE batch_id = $1 AND line_no = $2 AND worker = $3 AND status = 'running' RETURNING line_no`,
        [batchId, lineNo, workerId, outcome.succeeded ? 'succeeded' : 'failed', outcome.resultLine],
      );
      if (updated.length === 0) return false;
      await tx.query(
        `UPDATE aigw_batches SET completed = completed + $2, failed = failed + $3 WHERE id = $1`,
        [batchId, outcome.succeeded ? 1 : 0, outcome.succeeded ? 0 : 1],
      );
      return true;
    });
  }
}

interface InsertResult {
  count: number;
  errors: BatchInputError[];
}

/** Reads the input file line by line, inserting each valid line; stops inserting at the first error. */
async function insertLines(tx: SqlExecutor, batchId: string, workspace: string, fileId: string, endpoint: string): Promise<InsertResult> {
  const file = await tx.query(`SELECT purpose FROM aigw_files WHERE id = $1 AND workspace = $2 AND status = 'processed'`, [fileId, workspace]);
  const purpose = file[0]?.['purpose'];
  if (purpose === undefined) {
    return { count: 0, errors: [{ code: 'invalid_input_file', message: `Input file ${fileId} was not found.`, param: 'input_file_id', line: null }] };
  }
  if (purpose !== 'batch') {
    const message = `Input file ${fileId} has purpose "${String(purpose)}"; batch input files need purpose "batch".`;
    return { count: 0, errors: [{ code: 'invalid_input_file', message, param: 'input_file_id', line: null }] };
  }
  const errors: BatchInputError[] = [];
  const seen = new Set<string>();
  let lineNo = 0;
  let count = 0;
  let errorCount = 0;
  const handle = async (text: string): Promise<void> => {
    lineNo++;
    if (text.trim() === '') return;
    count++;
    if (count > MAX_BATCH_LINES) {
      if (count === MAX_BATCH_LINES + 1) {
        errors.push({ code: 'too_many_requests', message: `A batch holds at most ${MAX_BATCH_LINES} requests.`, param: null, line: lineNo });
      }
      return;
    }
    const parsed = parseBatchLine(text, lineNo, endpoint, seen);
    if (isInputError(parsed)) {
      errorCount++;
      if (errors.length < MAX_REPORTED_ERRORS) errors.push(parsed);
      return;
    }
    if (errors.length > 0) return; // the batch fails; no point storing more lines
    await tx.query(
      `INSERT INTO aigw_batch_lines (batch_id, line_no, custom_id, request, status) VALUES ($1, $2, $3, $4, 'pending')`,
      [batchId, lineNo, parsed.customId, JSON.stringify(parsed.request)],
    );
  };
  const splitter = new JsonlLineSplitter();
  for await (const chunk of readFileChunks(tx, fileId)) {
    for (const text of splitter.push(chunk)) await handle(text);
  }
  for (const text of splitter.end()) await handle(text);
  if (errorCount > errors.length) {
    errors.push({ code: 'more_errors', message: `${errorCount - errors.length} more invalid lines are not listed.`, param: null, line: null });
  }
  if (count === 0 && errors.length === 0) {
    errors.push({ code: 'empty_file', message: `Input file ${fileId} holds no requests.`, param: 'input_file_id', line: null });
  }
  return { count, errors };
}

/**
 * AIGATEWAY_SECRET_KEY when set; else, for a SQLite file, the key file next to it; else
 * (PostgreSQL without a configured key) a key for this process only, with a warning: a
 * line claimed by another replica then runs without its creator's credentials.
 */
export function defaultCredentialSeal(driver: SqlDriver, env: Readonly<Record<string, string | undefined>>): BatchCredentialSeal {
  const secret = env[SECRET_KEY_ENV];
  if (secret !== undefined && secret !== '') return BatchCredentialSeal.fromSecret(secret);
  if (driver instanceof SqliteDriver && driver.path !== ':memory:') return BatchCredentialSeal.fromKeyFile(dirname(driver.path));
  process.emitWarning(`${SECRET_KEY_ENV} is not set: batch credentials are sealed with a key of this process only; set the same key on every replica.`);
  return new BatchCredentialSeal(randomBytes(32));
}

export function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function toRecord(row: SqlRow): BatchRecord {
  const metadata = strOrNull(row['metadata']);
  const errors = strOrNull(row['errors']);
  return {
    id: str(row['id']),
    workspace: str(row['workspace']),
    endpoint: str(row['endpoint']),
    inputFileId: str(row['input_file_id']),
    completionWindow: str(row['completion_window']),
    status: str(row['status']) as BatchStatus,
    createdAt: num(row['created_at']),
    expiresAt: num(row['expires_at']),
    inProgressAt: numOrNull(row['in_progress_at']),
    finalizingAt: numOrNull(row['finalizing_at']),
    completedAt: numOrNull(row['completed_at']),
    failedAt: numOrNull(row['failed_at']),
    expiredAt: numOrNull(row['expired_at']),
    cancellingAt: numOrNull(row['cancelling_at']),
    cancelledAt: numOrNull(row['cancelled_at']),
    requestCounts: { total: num(row['total']), completed: num(row['completed']), failed: num(row['failed']) },
    metadata: metadata === null ? null : (JSON.parse(metadata) as Record<string, string>),
    errors: errors === null ? null : (JSON.parse(errors) as BatchInputError[]),
    outputFileId: strOrNull(row['output_file_id']),
    errorFileId: strOrNull(row['error_file_id']),
  };
}
