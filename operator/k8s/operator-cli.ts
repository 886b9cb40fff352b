import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadKubeConfig } from './kube-client.ts';
import { startOperator } from './start-operator.ts';
import { OPERATOR_USAGE } from './operator-usage.ts';

// `aigateway operator`: flags and environment variables → startOperator. Runs until
// SIGTERM/SIGINT, then releases the Lease so another replica takes over at once.

export { OPERATOR_USAGE };

const IN_CLUSTER_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function pick(flag: string | undefined, ...envNames: string[]): string | undefined {
  if (flag !== undefined) return flag;
  for (const name of envNames) {
    const value = process.env[name];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((item) => item.trim()).filter((item) => item !== '');
}

function integer(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return parsed;
}

async function inClusterNamespace(): Promise<string | undefined> {
  const { readFile } = await import('node:fs/promises');
  return readFile(IN_CLUSTER_NAMESPACE, 'utf8').then(
    (text) => text.trim() || undefined,
    () => undefined,
  );
}

/** Runs the operator; resolves to an exit code (2 for usage errors) or -1 while running. */
export async function operatorCommand(args: string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args,
      options: {
        namespace: { type: 'string' },
        kubeconfig: { type: 'string' },
        configmap: { type: 'string' },
        secret: { type: 'string' },
        lease: { type: 'string' },
        'lease-duration-ms': { type: 'string' },
        'metrics-port': { type: 'string' },
        'api-port': { type: 'string' },
        host: { type: 'string' },
        'egress-allow': { type: 'string' },
        'egress-client-allow': { type: 'string' },
        'protected-secrets': { type: 'string' },
        'owner-deployment': { type: 'string' },
        identity: { type: 'string' },
        'proxy-service': { type: 'string' },
        'redis-url': { type: 'string' },
        'log-level': { type: 'string' },
      },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`aigateway operator: ${(error as Error).message}\n\n${OPERATOR_USAGE}`);
    return 2;
  }
  const namespace = pick(values.namespace, 'AIGATEWAY_NAMESPACE', 'POD_NAMESPACE') ?? (await inClusterNamespace());
  if (namespace === undefined) {
    process.stderr.write(`aigateway operator: --namespace is required outside a pod\n\n${OPERATOR_USAGE}`);
    return 2;
  }
  let leaseDurationMs: number;
  let metricsPort: number;
  let apiPort: number;
  try {
    leaseDurationMs = integer(pick(values['lease-duration-ms'], 'AIGATEWAY_LEASE_DURATION_MS'), 'lease-duration-ms', 15_000);
    metricsPort = integer(pick(values['metrics-port'], 'AIGATEWAY_METRICS_PORT'), 'metrics-port', 9090);
    apiPort = integer(pick(values['api-port'], 'AIGATEWAY_API_PORT'), 'api-port', 8080);
  } catch (error) {
    process.stderr.write(`aigateway operator: ${(error as Error).message}\n\n${OPERATOR_USAGE}`);
    return 2;
  }
  const logger = pino({ level: pick(values['log-level'], 'AIGATEWAY_LOG_LEVEL') ?? 'info', base: { component: 'operator' } });
  const host = pick(values.host, 'AIGATEWAY_HOST') ?? '0.0.0.0';
  const operator = await startOperator({
    kubeConfig: loadKubeConfig(values.kubeconfig),
    namespace,
    logger,
    identity: pick(values.identity, 'POD_NAME') ?? `${hostname()}-${randomBytes(3).toString('hex')}`,
    configMapName: pick(values.configmap, 'AIGATEWAY_CONFIGMAP'),
    secretName: pick(values.secret, 'AIGATEWAY_SECRET'),
    leaseName: pick(values.lease, 'AIGATEWAY_LEASE'),
    leaseDurationMs,
    // client-go's ratios: renew deadline 2/3 of the lease, retry every 2/15 of it.
    renewDeadlineMs: Math.round((leaseDurationMs * 2) / 3),
    retryPeriodMs: Math.max(200, Math.round((leaseDurationMs * 2) / 15)),
    metricsPort,
    metricsHost: host,
    apiPort,
    apiHost: host,
    egressAllow: list(pick(values['egress-allow'], 'AIGATEWAY_EGRESS_ALLOW')),
    egressClientAllow: list(pick(values['egress-client-allow'], 'AIGATEWAY_EGRESS_CLIENT_ALLOW')),
    protectedSecrets: list(pick(values['protected-secrets'], 'AIGATEWAY_PROTECTED_SECRETS')),
    ownerDeployment: pick(values['owner-deployment'], 'AIGATEWAY_OWNER_DEPLOYMENT'),
    proxyService: pick(values['proxy-service'], 'AIGATEWAY_PROXY_SERVICE'),
    budgetStoreUrl: pick(values['redis-url'], 'REDIS_URL'),
  });
  process.stderr.write(`aigateway operator: namespace ${namespace}, control-plane API ${operator.apiUrl}, metrics ${operator.metricsUrl}\n`);
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'stopping operator');
    operator.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  return -1;
}
