import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

// The operator's own metrics and its probe endpoints, on their own port (the control-plane
// API has another): GET /metrics, /healthz (alive), /readyz (informers synced).

export interface OperatorMetrics {
  readonly registry: Registry;
  readonly reconciles: Counter<'result'>;
  readonly reconcileErrors: Counter<'stage'>;
  readonly reconcileDuration: Histogram;
  readonly queueDepth: Gauge;
  readonly isLeader: Gauge;
  readonly resources: Gauge<'kind' | 'ready'>;
  readonly statusWrites: Counter;
  readonly informerRelists: Counter<'informer' | 'reason'>;
  readonly proxyReplicasServing: Gauge;
}

export function createOperatorMetrics(options: { defaultMetrics?: boolean } = {}): OperatorMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'aigateway_operator_' });
  return {
    registry,
    reconciles: new Counter({ name: 'aigateway_operator_reconciles_total', help: 'Reconciles, by result (success, error).', labelNames: ['result'], registers: [registry] }),
    reconcileErrors: new Counter({
      name: 'aigateway_operator_reconcile_errors_total',
      help: 'Reconcile errors, by stage (render, apply, status).',
      labelNames: ['stage'],
      registers: [registry],
    }),
    reconcileDuration: new Histogram({
      name: 'aigateway_operator_reconcile_duration_seconds',
      help: 'Time to render, apply and write statuses.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    queueDepth: new Gauge({ name: 'aigateway_operator_workqueue_depth', help: 'Keys waiting in the work queue.', registers: [registry] }),
    isLeader: new Gauge({ name: 'aigateway_operator_leader', help: '1 when this replica holds the leader Lease.', registers: [registry] }),
    resources: new Gauge({
      name: 'aigateway_operator_resources',
      help: 'Custom resources seen in the last render, by kind and Ready status.',
      labelNames: ['kind', 'ready'],
      registers: [registry],
    }),
    statusWrites: new Counter({ name: 'aigateway_operator_status_writes_total', help: 'Status subresource writes.', registers: [registry] }),
    informerRelists: new Counter({
      name: 'aigateway_operator_informer_relists_total',
      help: 'Informer relists, by informer and reason (periodic, gone, error).',
      labelNames: ['informer', 'reason'],
      registers: [registry],
    }),
    proxyReplicasServing: new Gauge({
      name: 'aigateway_operator_proxy_replicas_serving',
      help: 'Ready proxy replicas serving the config hash they all agree on (0 while they differ).',
      registers: [registry],
    }),
  };
}

/** Serves /metrics, /healthz and /readyz. */
export async function startMetricsServer(metrics: OperatorMetrics, ready: () => boolean, port: number, host: string): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      );
    } else if (path === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else if (path === '/readyz') {
      const ok = ready();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ready' : 'syncing' }));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  return { server, url: `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}` };
}
