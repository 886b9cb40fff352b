import { join } from 'node:path';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { GatewayError } from '../errors.ts';
import type { CapturedBody } from '../observability/request-exchange.ts';
import type { RequestRecordSink } from '../observability/request-record.ts';
import { DEFAULT_EXCHANGE_BODY_BYTES, exchangeCapturePlugin } from './exchange-capture.ts';
import { ExchangeStore } from './exchange-store.ts';
import type { RequestLogStore } from './request-log-store.ts';

// Headers and bodies for the request log, assembled for the composition root when
// `serve --log-bodies` (AIGATEWAY_LOG_BODIES=true) asks for them; off by default, and off
// nothing of this is loaded. Capture (exchange-capture.ts) → the record's `exchange` → this
// sink wrapper, which queues it in its own store and passes the record on without it →
// GET /v1/logs/{id}/exchange, admin scope, confined to the caller's workspace like the record.
//
//   const exchanges = await startExchangeLogging({ kind: 'sqlite', dataDir, retentionDays: 30, logger });
//   startGateway({ …, requestSink: exchanges.wrapSink(logging.sink), plugins: [logging.routes, exchanges.capture, exchanges.routes(logging.store)] });

export const SQLITE_EXCHANGE_FILE = 'request-log-exchanges.sqlite';
const ADMIN = { config: { gatewayScope: 'admin' } } as const;
const RETENTION_PASS_MS = 3_600_000;

export interface ExchangeLoggingOptions {
  readonly kind: 'sqlite' | 'postgres';
  /** Where the SQLite file lives (standalone). */
  readonly dataDir: string;
  /** PostgreSQL connection string (a cluster); required for `postgres`. */
  readonly databaseUrl?: string | undefined;
  /** Exchanges older than this are deleted; 0 keeps everything. */
  readonly retentionDays: number;
  /** Kept of each body; default 32 KiB. */
  readonly maxBodyBytes?: number | undefined;
  readonly logger: Logger;
}

export interface ExchangeLogging {
  readonly store: ExchangeStore;
  /** The capture hooks (root-level); both builders fit startGateway's `plugins`. */
  readonly capture: () => FastifyPluginAsync;
  /** The request log's sink with exchanges taken out and stored here. */
  wrapSink(sink: RequestRecordSink): RequestRecordSink;
  /** GET /v1/logs/{id}/exchange, reading the record from the log store for its workspace. */
  routes(logStore: RequestLogStore): () => FastifyPluginAsync;
  close(): Promise<void>;
}

export async function startExchangeLogging(options: ExchangeLoggingOptions): Promise<ExchangeLogging> {
  let driver;
  if (options.kind === 'postgres') {
    if (options.databaseUrl === undefined || options.databaseUrl === '') throw new Error('the postgres log store needs DATABASE_URL');
    const { PostgresDriver } = await import('../sql/postgres-driver.ts');
    driver = new PostgresDriver({ connectionString: options.databaseUrl });
  } else {
    const { SqliteDriver } = await import('../sql/sqlite-driver.ts');
    // Bodies hold prompts: deleted rows are zeroed, not left in free pages.
    driver = new SqliteDriver(join(options.dataDir, SQLITE_EXCHANGE_FILE), { foreignKeys: false, secureDelete: true });
  }
  const store = await ExchangeStore.open(driver, options.logger);
  let retention: NodeJS.Timeout | undefined;
  if (options.retentionDays > 0) {
    const retentionMs = options.retentionDays * 86_400_000;
    const pass = (): void => {
      store.deleteOlderThan(Date.now() - retentionMs).catch((error: unknown) => options.logger.error({ err: { message: (error as Error).message } }, 'request exchange retention failed'));
    };
    pass();
    retention = setInterval(pass, RETENTION_PASS_MS).unref();
  }
  const capture = exchangeCapturePlugin({ maxBodyBytes: options.maxBodyBytes ?? DEFAULT_EXCHANGE_BODY_BYTES });
  return {
    store,
    capture: () => capture,
    wrapSink: (sink) => (record) => {
      const exchange = record.exchange;
      if (exchange === undefined) return sink(record);
      store.add({
        id: record.id,
        startedAt: record.startedAt,
        requestHeaders: exchange.requestHeaders,
        requestBody: exchange.requestBody,
        responseHeaders: exchange.responseHeaders,
        responseBody: exchange.responseBody,
      });
      sink({ ...record, exchange: undefined });
    },
    routes: (logStore) => () => async (app) => {
      app.get('/v1/logs/:id/exchange', ADMIN, async (request) => {
        const { id } = request.params as { id: string };
        const workspace = workspaceLimit(request);
        const [record, exchange] = await Promise.all([logStore.get(id), store.get(id)]).catch((error: unknown) => {
          throw new GatewayError('AIGW_ERR_STORE_UNAVAILABLE', 'The request log store did not answer; try again.', { cause: error });
        });
        if (record === undefined || (workspace !== undefined && record.workspace !== workspace)) throw new GatewayError('AIGW_ERR_NOT_FOUND', `No request log with id "${id}".`, { param: 'id' });
        if (exchange === undefined) throw new GatewayError('AIGW_ERR_NOT_FOUND', `No headers or bodies kept for request log "${id}".`, { param: 'id' });
        return {
          object: 'request_log.exchange' as const,
          id,
          request: { headers: exchange.requestHeaders, body: bodyJson(exchange.requestBody) },
          response: { headers: exchange.responseHeaders, body: bodyJson(exchange.responseBody) },
        };
      });
    },
    async close() {
      if (retention !== undefined) clearInterval(retention);
      await store.close();
    },
  };
}

function bodyJson(body: CapturedBody | undefined) {
  return body === undefined ? null : { text: body.text, bytes: body.bytes, truncated: body.truncated };
}

function workspaceLimit(request: FastifyRequest): string | undefined {
  const key = request.gateway.apiKey;
  if (key?.scopes.has('org_admin') === true) return undefined;
  return key?.workspace ?? '';
}
