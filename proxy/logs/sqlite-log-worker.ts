import type { RequestRecord } from '../observability/request-record.ts';
import { parentPort, workerData } from 'node:worker_threads';
import { RequestLogCursorError } from './request-log-store.ts';
import { SqliteLogDatabase } from './sqlite-log-database.ts';
import type { WorkerReply, WorkerRequest } from './sqlite-log-store.ts';

// The SQLite log store's thread: owns the database, answers one request at a time, in order.

const port = parentPort;
if (port === null) throw new Error('sqlite-log-worker must run as a worker thread');

let database: SqliteLogDatabase | undefined;
try {
  database = new SqliteLogDatabase((workerData as { path: string }).path);
  port.postMessage({ id: 0, ok: true, value: 'ready' } satisfies WorkerReply);
} catch (error) {
  // Reported to open(), which ends this thread.
  port.postMessage({ id: 0, ok: false, error: describe(error) } satisfies WorkerReply);
}

port.on('message', (request: WorkerRequest) => {
  let reply: WorkerReply;
  try {
    reply = { id: request.id, ok: true, value: run(request) };
  } catch (error) {
    reply = { id: request.id, ok: false, error: describe(error) };
  }
  port.postMessage(reply);
  if (request.op === 'close') port.close();
});

function run(request: WorkerRequest): unknown {
  if (database === undefined) throw new Error('request log database is not open');
  switch (request.op) {
    case 'insertMany':
      return database.insertMany(JSON.parse(request.json) as RequestRecord[]);
    case 'query':
      return database.query(request.filter, request.after, request.limit);
    case 'get':
      return database.get(request.key);
    case 'summary':
      return database.summary(request.filter, request.groupBy);
    case 'deleteOlderThan':
      return database.deleteOlderThan(request.cutoffMs);
    case 'close':
      return database.close();
  }
}

function describe(error: unknown): { name: string; message: string; cursor?: string } {
  if (error instanceof RequestLogCursorError) return { name: error.name, message: error.message, cursor: error.cursor };
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, message: e.message };
}
