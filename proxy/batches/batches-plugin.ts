import type { FastifyPluginAsync } from 'fastify';
import { registerFileRoutes } from '../files/file-routes.ts';
import { DEFAULT_MAX_FILE_BYTES } from '../files/gateway-file-upload.ts';
import { SqlFileStore } from '../files/sql-file-store.ts';
import { registerFineTuningRoutes } from '../fine-tuning/fine-tuning-routes.ts';
import type { GatewayHost } from '../gateway-host.ts';
import { injectLineExecutor } from './batch-line-executor.ts';
import { registerBatchRoutes } from './batch-routes.ts';
import { BatchRunner } from './batch-runner.ts';
import { SqlBatchStore } from './sql-batch-store.ts';
import type { SqlDriver } from '../sql/sql-driver.ts';
import { SqliteDriver } from '../sql/sqlite-driver.ts';

// Batches, files and fine-tuning as one gateway plugin: opens the store (SQLite file
// standalone, PostgreSQL when replicas share the work), starts this process's batch worker
// once the server is ready, and stops it (in-flight lines recorded) when the server closes.
//
//   startGateway({ …, plugins: [batchesPlugin({ store: { kind: 'sqlite', path: '.data/batches.sqlite' } })] })

export type BatchStoreLocation = { readonly kind: 'sqlite'; readonly path: string } | { readonly kind: 'postgres'; readonly connectionString: string };

export interface BatchesPluginOptions {
  readonly store: BatchStoreLocation;
  /** Lines in flight per process (default 8). */
  readonly concurrency?: number;
  /** A silent worker is presumed dead after this long and its in-flight lines fail (ms, default 10 000). */
  readonly leaseMs?: number;
  readonly pollIntervalMs?: number;
  readonly maxFileBytes?: number;
  readonly now?: () => number;
}

export function batchesPlugin(options: BatchesPluginOptions): (host: GatewayHost) => FastifyPluginAsync {
  return (host) => async (app) => {
    const driver = await openDriver(options.store);
    const batches = await SqlBatchStore.open(driver);
    const files = new SqlFileStore(driver);
    const now = options.now ?? Date.now;
    const runner = new BatchRunner({
      store: batches,
      execute: injectLineExecutor(host),
      logger: host.logger,
      concurrency: options.concurrency,
      leaseMs: options.leaseMs,
      pollIntervalMs: options.pollIntervalMs,
      // One SQLite file belongs to one process; PostgreSQL is shared by replicas.
      exclusive: options.store.kind === 'sqlite',
      now,
    });
    // Uploads are streamed by the file routes (to the store or the provider), never buffered.
    app.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null));
    // Every files and batches call counts under the rate-limit policies (route-policies.ts).
    registerBatchRoutes(app, { batches, files, dispatcher: host.dispatcher, wake: () => runner.wake(), now, policies: host, budgets: { budgets: host.budgets, dynamicUsageLimits: () => host.usageLimitStore?.snapshot() ?? [] } });
    registerFileRoutes(app, { files, dispatcher: host.dispatcher, now, maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, policies: host });
    registerFineTuningRoutes(app, { dispatcher: host.dispatcher });
    app.addHook('onReady', async () => {
      await runner.start();
      host.logger.info({ worker: runner.workerId, store: options.store.kind }, 'batch worker started');
    });
    // Closing makes inject refuse new requests: claim nothing more (those in flight finish).
    app.addHook('preClose', async () => runner.halt());
    app.addHook('onClose', async () => {
      await runner.stop();
      await batches.close();
    });
  };
}

/** PostgreSQL's client (pg, ≈ 11 MiB) loads only when the store is PostgreSQL. */
async function openDriver(location: BatchStoreLocation): Promise<SqlDriver> {
  if (location.kind === 'sqlite') return new SqliteDriver(location.path);
  const { PostgresDriver } = await import('../sql/postgres-driver.ts');
  return new PostgresDriver({ connectionString: location.connectionString });
}
