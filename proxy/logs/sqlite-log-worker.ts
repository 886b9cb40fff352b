import { parentPort, workerData } from 'node:worker_threads';
import { releaseWhenQuiet } from '../memory-release.ts';
import { ownThreadId, setThreadNice } from '../thread-priority.ts';
import { SqliteDriver } from '../sql/sqlite-driver.ts';
import { valuesOfBatch } from './log-batch-rows.ts';
import { RequestLogCursorError } from './request-log-store.ts';
import { SqlLogStore } from './sql-log-store.ts';
import type { WorkerReply, WorkerRequest } from './sqlite-log-store.ts';

// The SQLite log store's thread: owns the database (the one SQL log store on the SQLite
// driver) and answers each request; the driver runs its statements one at a time, in order.

const port = parentPort;
if (port === null) throw new Error('sqlite-log-worker must run as a worker thread');
const { path, nice } = workerData as { path: string; nice: number };

// Below the serving thread's priority, this thread only (proxy/thread-priority.ts).
if (nice !== 0) {
  const tid = ownThreadId();
  // Refused, or no /proc: the default priority; slower commits compete with requests, nothing breaks.
  if (tid !== undefined) setThreadNice(tid, nice);
}

// Requests that arrive while the database opens wait for it (the first is `ready`); when it
// cannot be opened every one is answered with that error, and the store ends this thread.
// Logs hold no foreign keys, and deleted rows are old logs, not secrets: no secure_delete.
const opening: Promise<SqlLogStore> = Promise.resolve().then(() => SqlLogStore.open(new SqliteDriver(path, {})));
opening.catch(() => undefined);

// Batches grow this isolate's young generation and leave garbage behind, kept while the thread
// waits: two quiet seconds after its last message, one memory-reducing collection (issue 32).
const quiet = releaseWhenQuiet();

port.on('message', (request: WorkerRequest) => {
  quiet.touch();
  run(request).then(
    (value) => port.postMessage({ id: request.id, ok: true, value } satisfies WorkerReply),
    (error: unknown) => port.postMessage({ id: request.id, ok: false, error: describe(error) } satisfies WorkerReply),
  ).finally(() => {
    if (request.op === 'close') {
      quiet.stop();
      port.close();
    }
  });
});

async function run(request: WorkerRequest): Promise<unknown> {
  const store = await opening;
  switch (request.op) {
    case 'ready':
      return 'ready';
    case 'insertMany':
      return store.insertValues(valuesOfBatch(request.batch));
    case 'query':
      return store.query(request.filter, request.after, request.limit);
    case 'get':
      return store.get(request.key);
    case 'summary':
      return store.summary(request.filter, request.groupBy);
    case 'deleteOlderThan':
      return store.deleteOlderThan(request.cutoffMs);
    case 'close':
      return store.close();
  }
}

function describe(error: unknown): { name: string; message: string; cursor?: string } {
  if (error instanceof RequestLogCursorError) return { name: error.name, message: error.message, cursor: error.cursor };
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, message: e.message };
}
