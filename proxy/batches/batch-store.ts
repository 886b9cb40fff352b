import { randomBytes } from 'node:crypto';
import type { Page } from '../files/file-store.ts';
import type { BatchInputError, BatchLineRequest } from './batch-input.ts';

// Gateway-managed batches (completion_window "immediate"): the records, the lines and the
// work queue, behind one interface with a SQLite (standalone) and a PostgreSQL (replicas)
// implementation that pass one shared test suite. Ids start with `gwbatch-`.

export const GATEWAY_BATCH_PREFIX = 'gwbatch-';

export type BatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

export interface BatchRecord {
  readonly id: string;
  readonly workspace: string;
  readonly endpoint: string;
  readonly inputFileId: string;
  readonly completionWindow: string;
  readonly status: BatchStatus;
  /** Unix seconds, like every timestamp here. */
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly inProgressAt: number | null;
  readonly finalizingAt: number | null;
  readonly completedAt: number | null;
  readonly failedAt: number | null;
  readonly expiredAt: number | null;
  readonly cancellingAt: number | null;
  readonly cancelledAt: number | null;
  readonly requestCounts: { readonly total: number; readonly completed: number; readonly failed: number };
  readonly metadata: Record<string, string> | null;
  readonly errors: readonly BatchInputError[] | null;
  readonly outputFileId: string | null;
  readonly errorFileId: string | null;
}

export interface NewBatch {
  readonly id: string;
  readonly workspace: string;
  readonly endpoint: string;
  readonly inputFileId: string;
  readonly metadata: Record<string, string> | null;
  /** The creating request's headers: each line runs with them (credentials included). */
  readonly headers: Readonly<Record<string, string>>;
  readonly createdMs: number;
  /** Unix seconds after which lines not yet started are not started. */
  readonly expiresAt: number;
}

/** A line handed to one worker: recorded as `running` by that worker before it is sent. */
export interface ClaimedLine {
  readonly batchId: string;
  readonly lineNo: number;
  readonly customId: string;
  readonly request: BatchLineRequest;
  readonly headers: Readonly<Record<string, string>>;
}

export interface LineOutcome {
  readonly succeeded: boolean;
  /** The output- or error-file line (see batch-output.ts). */
  readonly resultLine: string;
}

export type CancelResult =
  | { readonly kind: 'cancelling'; readonly batch: BatchRecord }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'not-cancellable'; readonly batch: BatchRecord };

export interface BatchStore {
  create(batch: NewBatch): Promise<BatchRecord>;
  get(workspace: string, id: string): Promise<BatchRecord | undefined>;
  /** Newest first; `after` is the id of the last batch of the previous page. */
  list(workspace: string, query: { after: string | undefined; limit: number }): Promise<Page<BatchRecord>>;
  /** validating / in_progress → cancelling; cancelling and cancelled are returned as they are. */
  cancel(workspace: string, id: string, nowMs: number): Promise<CancelResult>;

  // The worker side.
  heartbeat(workerId: string, nowMs: number): Promise<void>;
  /** Standalone start: every other worker of this database is gone. */
  forgetOtherWorkers(workerId: string): Promise<void>;
  /**
   * Lines `running` under a worker whose heartbeat is older than `cutoffMs` (or unknown)
   * become failed with an `interrupted` error: they may have reached the provider, so they
   * are never sent again. Returns how many.
   */
  failOrphanedLines(cutoffMs: number, limit: number): Promise<number>;
  /** Validates one `validating` batch's input file into lines (→ in_progress, or failed). */
  validateNext(nowMs: number): Promise<string | undefined>;
  /** Claims up to `limit` pending lines of in_progress, unexpired batches for `workerId`. */
  claimLines(workerId: string, nowMs: number, limit: number): Promise<ClaimedLine[]>;
  /** Hands a claimed line back unsent (e.g. the gateway was closing); it runs later. */
  releaseLine(workerId: string, line: ClaimedLine): Promise<void>;
  /** Records a claimed line's outcome; false when the claim was lost (line already failed). */
  finishLine(workerId: string, line: ClaimedLine, outcome: LineOutcome): Promise<boolean>;
  /**
   * Ends the batches with no line left to run: writes output and error files, moves to
   * completed / cancelled / expired. Safe to run from every replica at once.
   */
  finalizeReady(nowMs: number, limit: number): Promise<string[]>;
  close(): Promise<void>;
}

export function isGatewayBatchId(id: string): boolean {
  return id.startsWith(GATEWAY_BATCH_PREFIX);
}

export function newGatewayBatchId(): string {
  return GATEWAY_BATCH_PREFIX + randomBytes(12).toString('hex');
}

/**
 * The spec's (and OpenAI's) Batch object. Moments that have not happened (and files not
 * written) are left out rather than null: the schemas type them as plain integers/strings.
 */
export function toBatchObject(batch: BatchRecord): Record<string, unknown> {
  const object: Record<string, unknown> = {
    id: batch.id,
    object: 'batch',
    endpoint: batch.endpoint,
    errors: batch.errors === null ? undefined : { object: 'list', data: batch.errors },
    input_file_id: batch.inputFileId,
    completion_window: batch.completionWindow,
    status: batch.status,
    output_file_id: batch.outputFileId,
    error_file_id: batch.errorFileId,
    created_at: batch.createdAt,
    in_progress_at: batch.inProgressAt,
    expires_at: batch.expiresAt,
    finalizing_at: batch.finalizingAt,
    completed_at: batch.completedAt,
    failed_at: batch.failedAt,
    expired_at: batch.expiredAt,
    cancelling_at: batch.cancellingAt,
    cancelled_at: batch.cancelledAt,
    request_counts: { ...batch.requestCounts },
  };
  for (const [key, value] of Object.entries(object)) if (value === null || value === undefined) delete object[key];
  object['metadata'] = batch.metadata;
  return object;
}
