import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { RequestRecordSink } from '../observability/request-record.ts';
import type { GatewayHost } from '../gateway-host.ts';
import { startLogRetention, type LogRetention } from './log-retention.ts';
import { requestLogRoutes } from './request-log-routes.ts';
import type { RequestLogStore } from './request-log-store.ts';
import { createRequestLogWriter, type RequestLogWriter } from './request-log-writer.ts';
import { SqliteLogStore } from './sqlite-log-store.ts';

// The request log, assembled for the composition root: store + writer + retention + routes.
//
//   const logging = await startRequestLogging({ kind: 'sqlite', dataDir, retentionDays: 30, metrics, logger });
//   startGateway({ …, requestSink: logging?.sink, plugins: logging ? [logging.routes] : [] });
//   await logging?.ready;  // beside the gateway's start
//   …  await logging?.close();   // after the gateway has closed: flushes the queue

export const LOG_STORE_KINDS = ['sqlite', 'postgres', 'off'] as const;
export type LogStoreKind = (typeof LOG_STORE_KINDS)[number];

export const SQLITE_LOG_FILE = 'request-logs.sqlite';

/**
 * PostgreSQL behind a network: batches of 500 (one unnest INSERT each) and a buffer of 60,000
 * records (~1 KB each in memory, so ~60 MB at most): 30 s of 2,000 req/s on one replica, a
 * minute or more when replicas share the load, to ride out a restart or failover without a
 * drop. Measured in docs/performance.md ("Request log on PostgreSQL").
 */
const POSTGRES_WRITER = { batchSize: 500, maxQueue: 60_000, flushIntervalMs: 500 } as const;

/**
 * SQLite on the worker thread: a part-filled batch goes after 100 ms. Held for the default
 * second, a record (and what it holds) outlives the young generation's collections and is
 * copied into the old one; at 400 req/s that doubled the bytes promoted (docs/performance.md).
 */
const SQLITE_WRITER = { flushIntervalMs: 100 } as const;

export interface RequestLoggingOptions {
  kind: LogStoreKind;
  /** Where the SQLite file lives (standalone). */
  dataDir: string;
  /** PostgreSQL connection string; required for `postgres`. */
  databaseUrl?: string | undefined;
  /** Records older than this are deleted; 0 keeps everything. */
  retentionDays: number;
  metrics: { readonly registry: Registry };
  logger: Logger;
}

export interface RequestLogging {
  readonly store: RequestLogStore;
  /**
   * Settles once the store is open (SQLite opens on its worker while the gateway starts);
   * rejects when it cannot be. Records and reads before then wait for it.
   */
  readonly ready: Promise<void>;
  readonly writer: RequestLogWriter;
  readonly sink: RequestRecordSink;
  readonly routes: (host: GatewayHost) => FastifyPluginAsync;
  /** Stops retention, flushes the writer, closes the store. */
  close(): Promise<void>;
}

export function isLogStoreKind(value: string): value is LogStoreKind {
  return (LOG_STORE_KINDS as readonly string[]).includes(value);
}

/** Opens the store and starts the writer; undefined when the log store is off. */
export async function startRequestLogging(options: RequestLoggingOptions): Promise<RequestLogging | undefined> {
  if (options.kind === 'off') return undefined;
  let store: RequestLogStore;
  let ready = Promise.resolve();
  if (options.kind === 'postgres') {
    if (options.databaseUrl === undefined || options.databaseUrl === '') throw new Error('the postgres log store needs DATABASE_URL');
    // PostgreSQL's client (pg) loads only for this store.
    const [{ PostgresDriver }, { SqlLogStore }] = await Promise.all([import('../sql/postgres-driver.ts'), import('./sql-log-store.ts')]);
    const sqlStore = await SqlLogStore.open(new PostgresDriver({ connectionString: options.databaseUrl }));
    if (!sqlStore.partitioned) {
      options.logger.warn({}, 'the request log table is not partitioned (made by an earlier release): retention deletes rows instead of dropping days; see docs/operations.md to migrate');
    }
    store = sqlStore;
  } else {
    ({ store, ready } = SqliteLogStore.start({ path: join(options.dataDir, SQLITE_LOG_FILE) }));
  }
  const writer = createRequestLogWriter(store, {
    metrics: options.metrics,
    logger: options.logger,
    logInfo: (object, message) => options.logger.info(object, message),
    ...(options.kind === 'postgres' ? POSTGRES_WRITER : SQLITE_WRITER),
  });
  let retention: LogRetention | undefined;
  if (options.retentionDays > 0) {
    retention = startLogRetention(store, { retentionMs: options.retentionDays * 86_400_000, logger: options.logger });
  }
  return {
    store,
    ready,
    writer,
    sink: writer.sink,
    routes: requestLogRoutes(store),
    async close() {
      await retention?.stop();
      await writer.close();
      await store.close();
    },
  };
}
