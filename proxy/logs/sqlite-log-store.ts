import { Worker } from 'node:worker_threads';
import type { RequestRecord } from '../observability/request-record.ts';
import { encodeBatch, transferablesOf, type EncodedBatch } from './log-batch-codec.ts';
import {
  RequestLogCursorError,
  type AnalyticsSummary,
  type LogFilter,
  type LogPage,
  type RequestLogStore,
  type SummaryGroupBy,
} from './request-log-store.ts';

// The standalone log store: SQLite (node:sqlite) in a worker thread. node:sqlite is
// synchronous; measured on the dev box, a 500-row commit took 15–25 ms (median) and up to
// ~90 ms when a WAL checkpoint hit the disk — on the serving thread that would be added to
// every in-flight request. Here the serving thread only posts messages and awaits replies;
// a batch of records goes as columns (log-batch-codec.ts: ~1.5 µs a record with the post,
// against ~8 for JSON text and ~4 for a structured clone of the objects).
//
//   const store = await SqliteLogStore.open({ path: '.data/request-logs.sqlite' });

export type WorkerRequest = { id: number } & (
  | { op: 'ready' }
  | { op: 'insertMany'; batch: EncodedBatch }
  | { op: 'query'; filter: LogFilter; after: string | undefined; limit: number }
  | { op: 'get'; key: string }
  | { op: 'summary'; filter: LogFilter; groupBy: SummaryGroupBy | undefined }
  | { op: 'deleteOlderThan'; cutoffMs: number }
  | { op: 'close' }
);

export type WorkerReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string; cursor?: string } };

type Op = WorkerRequest['op'];
type Payload<O extends Op> = Omit<Extract<WorkerRequest, { op: O }>, 'id' | 'op'>;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

const DEFAULT_THREAD_NICE = 5;

export interface SqliteLogStoreOptions {
  /** Database file; created with its directory's permissions. `:memory:` for a scratch store. */
  path: string;
  /**
   * The worker thread's nice value (Linux; elsewhere ignored). Default 5: when the serving
   * thread and a commit want the same core, the serving thread gets 3/4 of it, and the worker
   * still keeps up with a saturated gateway (docs/performance.md). 0 for the default priority.
   */
  threadNice?: number;
}

export class SqliteLogStore implements RequestLogStore {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #stopped: Error | undefined;

  private constructor(worker: Worker) {
    this.#worker = worker;
    worker.on('message', (reply: WorkerReply) => this.#settle(reply));
    worker.on('error', (error) => this.#stop(error));
    worker.on('exit', () => this.#stop(new Error('request log store closed')));
  }

  /** Starts the worker and opens (creating) the database; rejects when it cannot. */
  static async open(options: SqliteLogStoreOptions): Promise<SqliteLogStore> {
    const { store, ready } = SqliteLogStore.start(options);
    await ready;
    return store;
  }

  /**
   * The store at once, its database opening on the worker meanwhile (the gateway's start-up
   * goes on beside it): calls made before `ready` wait in the worker's queue. `ready` rejects
   * when the database cannot be opened, and the store is then closed.
   */
  static start(options: SqliteLogStoreOptions): { store: SqliteLogStore; ready: Promise<void> } {
    // The worker only parses batches and runs SQLite: a small young generation is plenty.
    const worker = new Worker(new URL('./sqlite-log-worker.ts', import.meta.url), { workerData: { path: options.path, nice: options.threadNice ?? DEFAULT_THREAD_NICE }, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    const store = new SqliteLogStore(worker);
    const ready = store.#call('ready', {}).catch(async (error: Error) => {
      await worker.terminate();
      throw new Error(`cannot open the request log database ${options.path}: ${error.message}`);
    });
    return { store, ready: ready.then(() => undefined) };
  }

  async insertMany(records: readonly RequestRecord[]): Promise<void> {
    if (records.length === 0) return;
    const batch = encodeBatch(records);
    await this.#call('insertMany', { batch }, transferablesOf(batch));
  }

  async query(filter: LogFilter, after: string | undefined, limit: number): Promise<LogPage> {
    return (await this.#call('query', { filter, after, limit })) as LogPage;
  }

  async get(id: string): Promise<RequestRecord | undefined> {
    return (await this.#call('get', { key: id })) as RequestRecord | undefined;
  }

  async summary(filter: LogFilter, groupBy: SummaryGroupBy | undefined): Promise<AnalyticsSummary> {
    return (await this.#call('summary', { filter, groupBy })) as AnalyticsSummary;
  }

  async deleteOlderThan(cutoffMs: number): Promise<number> {
    return (await this.#call('deleteOlderThan', { cutoffMs })) as number;
  }

  /** Closes the database (after the calls already sent) and ends the worker. Idempotent. */
  async close(): Promise<void> {
    if (this.#stopped !== undefined) return;
    const exited = new Promise((resolve) => this.#worker.once('exit', resolve));
    const closed = this.#call('close', {}).catch(() => undefined);
    this.#stopped = new Error('request log store closed');
    await closed;
    await this.#worker.terminate();
    await exited;
  }

  #call<O extends Op>(op: O, payload: Payload<O>, transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (this.#stopped !== undefined) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, op, ...payload }, transfer);
    });
  }

  #settle(reply: WorkerReply): void {
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(errorFrom(reply.error));
  }

  #stop(error: Error): void {
    this.#stopped ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

function errorFrom(error: { name: string; message: string; cursor?: string }): Error {
  if (error.name === 'RequestLogCursorError' && error.cursor !== undefined) return new RequestLogCursorError(error.cursor);
  const rebuilt = new Error(error.message);
  rebuilt.name = error.name;
  return rebuilt;
}
