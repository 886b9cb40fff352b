// aigateway CLI commands — the composition root (DESIGN.md §1); bin/aigateway.js is the entry.
//   serve     run the gateway standalone on a state file (hot-reloaded)
//   validate  check a state file and every saved config in it
//   operator  run the Kubernetes operator (operator/k8s)
// Only what a command and its configuration use is loaded: `serve` never loads the operator
// or the Kubernetes client, and Redis, PostgreSQL and the control-plane forwarder load when
// they are configured.
import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { controlPlaneRoutes } from '../operator/api/control-plane.ts';
import { OPERATOR_USAGE } from '../operator/k8s/operator-usage.ts';
import { batchesPlugin } from '../proxy/batches/batches-plugin.ts';
import { loadStateFromFiles } from '../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../proxy/guardrails/builtin-guardrail-compiler.ts';
import { inClusterConnection, startKubeStateSource } from '../proxy/config/kube-state-source.ts';
import { isLogStoreKind, startRequestLogging, type RequestLogging } from '../proxy/logs/request-logging.ts';
import { createGatewayMetrics, type GatewayMetrics } from '../proxy/observability/gateway-metrics.ts';
import { FilePolicyStore } from '../proxy/ratelimit/policy-store.ts';
import { FileUsageLimitStore } from '../proxy/budgets/usage-limit-store.ts';
import { createGatewayLogger } from '../proxy/observability/log-line.ts';
import { startGateway } from '../proxy/start-gateway.ts';
import { DEFAULT_IDLE_HEAP_HEADROOM_MIB, releaseMemoryWhenIdle, releaseStartUpMemory } from './start-up-memory.ts';
import { DEFAULT_HELPER_THREAD_NICE, yieldHelperThreads } from '../proxy/thread-priority.ts';
import { StateLoadError } from '../proxy/errors.ts';

const USAGE = `Usage: aigateway <command> [options]

Commands:
  serve      Run the gateway standalone
               --config <file>       state file      (env AIGATEWAY_CONFIG, required)
               --credentials <file>  credentials file (env AIGATEWAY_CREDENTIALS, optional)
               --port <n>            listen port     (env AIGATEWAY_PORT, default 8787)
               --host <h>            listen address  (env AIGATEWAY_HOST, default 127.0.0.1)
               --data-dir <dir>      local stores    (env AIGATEWAY_DATA_DIR, default .data)
               --log-file <file>     request log     (env AIGATEWAY_LOG_FILE, default stdout)
               --log-level <level>   (env AIGATEWAY_LOG_LEVEL, default info)
               --max-body-bytes <n>  (env AIGATEWAY_MAX_BODY_BYTES, default 20971520)
               --max-in-flight <n>   most /v1 requests at once, then 503 (env AIGATEWAY_MAX_IN_FLIGHT, default 2048)
               --max-parsed-answer-bytes <n> largest plain answer read whole to be translated or checked, then 502 (env AIGATEWAY_MAX_PARSED_ANSWER_BYTES, default 16777216)
               --max-in-flight-per-key <n> most /v1 requests of one API key at once, then 429 (env AIGATEWAY_MAX_IN_FLIGHT_PER_KEY, default a quarter of --max-in-flight)
               --drain-timeout-ms <n> on SIGTERM, cut open requests after this (env AIGATEWAY_DRAIN_TIMEOUT_MS, default 30000)
               --shutdown-delay-ms <n> on SIGTERM, keep serving this long after readiness turns false (env AIGATEWAY_SHUTDOWN_DELAY_MS, default 0)
               --helper-thread-nice <n> run V8's GC and compiler helper threads at this nice value, below the serving
                                     thread (Linux; env AIGATEWAY_HELPER_THREAD_NICE, 0-19, default 10; 0 leaves them)
               --idle-heap-headroom-mib <n> old-generation room V8 leaves after collections while idle, so the next
                                     burst starts without a full GC (env AIGATEWAY_IDLE_HEAP_HEADROOM_MIB, 0-1024, default 32; 0: V8's own)
               --metrics-port <n>    serve /metrics on this port instead of --port (env AIGATEWAY_METRICS_PORT)
               --redis-url <url>     shared rate-limit counters and response cache (env REDIS_URL; default: in memory)
               --ratelimit-fail-mode open|closed  when Redis fails (env AIGATEWAY_RATELIMIT_FAIL_MODE, default open)
               --budget-leases on|off  with Redis, admit budgeted requests from leases reserved ahead (on) or reserve
                                     in Redis per request (off) (env AIGATEWAY_BUDGET_LEASES, default on; docs/budgets.md)
               --database-url <url>  PostgreSQL for gateway-managed files and batches, shared by replicas
                                     (env DATABASE_URL; default: SQLite in the data dir)
               --log-store sqlite|postgres|off  request log store behind GET /v1/logs (env AIGATEWAY_LOG_STORE,
                                     default sqlite in the data dir; postgres uses --database-url)
               --log-retention-days <n>  delete request logs older than this (env AIGATEWAY_LOG_RETENTION_DAYS,
                                     default 30; 0 keeps them)
               --console             serve the web console at /console (env AIGATEWAY_CONSOLE=true; docs/console.md)
               --log-bodies          keep request headers (credentials redacted) and bodies (32 KiB each) beside
                                     the request log (env AIGATEWAY_LOG_BODIES=true; default off: prompts are kept)
               --batch-concurrency <n> batch lines in flight per process (env AIGATEWAY_BATCH_CONCURRENCY, default 8)
               --batch-lease-ms <n>  a silent batch worker is presumed dead after this (env AIGATEWAY_BATCH_LEASE_MS, default 10000)
               --kube-configmap <name>  in a pod: also watch the state ConfigMap (and --kube-secret) through the
                                     API server, so changes apply in about a second instead of the kubelet's
                                     volume sync; the mounted files stay the fallback (env AIGATEWAY_KUBE_CONFIGMAP)
               --kube-secret <name>  the credentials Secret watched with it (env AIGATEWAY_KUBE_SECRET)
               --control-plane-url <url>  forward /v1/prompts/* and /v1/policies/* there instead of serving them
                                     in-process (in a cluster: the operator's API; env AIGATEWAY_CONTROL_PLANE_URL)
  validate <file> [--credentials <file>]
             Check a state file; exit 0 when valid, 1 otherwise
${OPERATOR_USAGE}`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'validate':
      return validate(rest);
    case 'operator':
      return (await import('../operator/k8s/operator-cli.ts')).operatorCommand(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`aigateway: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

/** A flag wins over its environment variable, which wins over the default. */
function pick(flag: string | undefined, envName: string, fallback?: string): string | undefined {
  if (flag !== undefined) return flag;
  const fromEnv = process.env[envName];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : fallback;
}

function positiveInteger(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new UsageError(`${name} must be a non-negative integer, got "${value}"`);
  return parsed;
}

/** A non-negative integer no larger than `max`. */
function integerUpTo(value: string | undefined, name: string, max: number): number | undefined {
  const parsed = positiveInteger(value, name);
  if (parsed !== undefined && parsed > max) throw new UsageError(`${name} must be 0-${max}, got "${parsed}"`);
  return parsed;
}

class UsageError extends Error {}
/** Something the environment must fix before the gateway can start: reported as one line. */
class StartupError extends Error {}

/** The data directory exists and this process may write it, or a one-line StartupError. */
function ensureWritableDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 }); // stores and the secret key: owner only
    accessSync(dataDir, fsConstants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new StartupError(`the data directory ${dataDir} is not writable (${code}): set --data-dir or AIGATEWAY_DATA_DIR to a directory this user (uid ${process.getuid?.() ?? '?'}) can write`);
  }
}

/** A listen failure (port taken, address not available, no permission) in words. */
function listenFailure(error: unknown): StartupError | undefined {
  const { code, address, port } = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') return undefined;
  const where = address === undefined ? `port ${port}` : `${address}:${port}`;
  const why = code === 'EADDRINUSE' ? 'is already in use by another process' : code === 'EACCES' ? 'needs privileges this user lacks' : 'is not an address of this machine';
  return new StartupError(`cannot listen on ${where}: it ${why} (${code}); choose another --port / --metrics-port / --host`);
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      credentials: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-file': { type: 'string' },
      'log-level': { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'redis-url': { type: 'string' },
      'metrics-port': { type: 'string' },
      'max-in-flight': { type: 'string' },
      'max-in-flight-per-key': { type: 'string' },
      'max-parsed-answer-bytes': { type: 'string' },
      'drain-timeout-ms': { type: 'string' },
      'helper-thread-nice': { type: 'string' },
      'idle-heap-headroom-mib': { type: 'string' },
      'shutdown-delay-ms': { type: 'string' },
      'ratelimit-fail-mode': { type: 'string' },
      'budget-leases': { type: 'string' },
      'control-plane-url': { type: 'string' },
      'database-url': { type: 'string' },
      'batch-concurrency': { type: 'string' },
      'batch-lease-ms': { type: 'string' },
      'log-store': { type: 'string' },
      'log-retention-days': { type: 'string' },
      console: { type: 'boolean' },
      'log-bodies': { type: 'boolean' },
      'kube-configmap': { type: 'string' },
      'kube-secret': { type: 'string' },
    },
    strict: true,
  });
  const configPath = pick(values.config, 'AIGATEWAY_CONFIG');
  if (configPath === undefined) throw new UsageError('serve needs --config <file> (or AIGATEWAY_CONFIG)');
  const port = positiveInteger(pick(values.port, 'AIGATEWAY_PORT', '8787'), 'port') ?? 8787;
  const host = pick(values.host, 'AIGATEWAY_HOST', '127.0.0.1') ?? '127.0.0.1';
  const dataDir = resolve(pick(values['data-dir'], 'AIGATEWAY_DATA_DIR', '.data') ?? '.data');
  const credentialsPath = pick(values.credentials, 'AIGATEWAY_CREDENTIALS');
  const bodyLimitBytes = positiveInteger(pick(values['max-body-bytes'], 'AIGATEWAY_MAX_BODY_BYTES'), 'max-body-bytes');
  const logger = createGatewayLogger({
    level: pick(values['log-level'], 'AIGATEWAY_LOG_LEVEL', 'info'),
    destination: pick(values['log-file'], 'AIGATEWAY_LOG_FILE'),
  });
  const failMode = pick(values['ratelimit-fail-mode'], 'AIGATEWAY_RATELIMIT_FAIL_MODE', 'open');
  if (failMode !== 'open' && failMode !== 'closed') throw new UsageError(`ratelimit-fail-mode must be open or closed, got "${failMode}"`);
  const redisUrl = pick(values['redis-url'], 'REDIS_URL');
  const budgetLeases = pick(values['budget-leases'], 'AIGATEWAY_BUDGET_LEASES', 'on');
  if (budgetLeases !== 'on' && budgetLeases !== 'off') throw new UsageError(`budget-leases must be on or off, got "${budgetLeases}"`);
  const helperNice = integerUpTo(pick(values['helper-thread-nice'], 'AIGATEWAY_HELPER_THREAD_NICE'), 'helper-thread-nice', 19) ?? DEFAULT_HELPER_THREAD_NICE;
  const idleHeadroomMib = integerUpTo(pick(values['idle-heap-headroom-mib'], 'AIGATEWAY_IDLE_HEAP_HEADROOM_MIB'), 'idle-heap-headroom-mib', 1024) ?? DEFAULT_IDLE_HEAP_HEADROOM_MIB;
  // GC and compiler helpers yield to the serving thread where they share a core (proxy/thread-priority.ts).
  yieldHelperThreads(helperNice);
  ensureWritableDataDir(dataDir);
  const policyStore = await FilePolicyStore.open(join(dataDir, 'rate-limit-policies.json'));
  const usageLimitStore = await FileUsageLimitStore.open(join(dataDir, 'usage-limit-policies.json'));

  const env = { ...process.env };
  ensureGatewayApiKey(resolve(configPath), env);

  const metrics = createGatewayMetrics();
  const redis = redisUrl === undefined ? undefined : await redisStoresOf(redisUrl, budgetLeases === 'on');
  const controlPlaneUrl = pick(values['control-plane-url'], 'AIGATEWAY_CONTROL_PLANE_URL');
  const controlPlane = await controlPlaneOf(controlPlaneUrl);
  // In a cluster the console's replicas and custom resources come from the operator too.
  const clusterView = controlPlaneUrl === undefined ? undefined : (await import('../operator/api/cluster-view-client.ts')).clusterViewClient({ baseUrl: controlPlaneUrl });
  const requestLogging = await requestLoggingOf(values, dataDir, metrics, logger);
  // Headers and bodies beside the log, only when asked for (docs/console.md).
  const exchanges = requestLogging !== undefined && (values['log-bodies'] === true || process.env['AIGATEWAY_LOG_BODIES'] === 'true') ? await exchangeLoggingOf(values, dataDir, logger) : undefined;
  const consoleOn = values.console === true || process.env['AIGATEWAY_CONSOLE'] === 'true';
  const starting = startGateway({
    sources: { statePath: resolve(configPath), credentialsPath: credentialsPath && resolve(credentialsPath) },
    env,
    logger,
    port,
    host,
    bodyLimitBytes,
    policyStore,
    usageLimitStore,
    counterStore: redis?.counterStore,
    budgetStore: redis?.budgetStore,
    cacheStore: redis?.cacheStore,
    semanticIndex: redis?.semanticIndex,
    rateLimitFailMode: failMode,
    metricsPort: positiveInteger(pick(values['metrics-port'], 'AIGATEWAY_METRICS_PORT'), 'metrics-port'),
    maxInFlight: positiveInteger(pick(values['max-in-flight'], 'AIGATEWAY_MAX_IN_FLIGHT'), 'max-in-flight'),
    maxParsedAnswerBytes: positiveInteger(pick(values['max-parsed-answer-bytes'], 'AIGATEWAY_MAX_PARSED_ANSWER_BYTES'), 'max-parsed-answer-bytes'),
    maxInFlightPerKey: positiveInteger(pick(values['max-in-flight-per-key'], 'AIGATEWAY_MAX_IN_FLIGHT_PER_KEY'), 'max-in-flight-per-key'),
    controlPlane,
    clusterView,
    metrics,
    stateSource: kubeStateSourceOf(pick(values['kube-configmap'], 'AIGATEWAY_KUBE_CONFIGMAP'), pick(values['kube-secret'], 'AIGATEWAY_KUBE_SECRET'), env, logger),
    requestSink: exchanges !== undefined && requestLogging !== undefined ? exchanges.wrapSink(requestLogging.sink) : requestLogging?.sink,
    console: consoleOn,
    beforeListen: releaseStartUpMemory,
    plugins: [
      batchesPluginOf(values, dataDir),
      ...(requestLogging === undefined ? [] : [requestLogging.routes]),
      ...(exchanges === undefined || requestLogging === undefined ? [] : [exchanges.capture, exchanges.routes(requestLogging.store)]),
    ],
  });
  // The log store opens (on its worker) while the gateway starts.
  const gateway = await Promise.all([starting, requestLogging?.ready]).then(
    ([started]) => started,
    async (error: unknown) => {
      await (await starting.catch(() => undefined))?.close();
      await requestLogging?.close(); // its PostgreSQL pool would hold the exit
      await exchanges?.close();
      await redis?.connection.close(); // so would the Redis socket
      throw listenFailure(error) ?? error;
    },
  );
  // After a burst of traffic, memory goes back once the gateway idles (start-up-memory.ts).
  const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10; // MiB, one decimal
  const idleRelease = releaseMemoryWhenIdle({
    headroomBytes: idleHeadroomMib * 1024 * 1024,
    onReleased: (before, after) => logger.info({ rss_before_mib: mib(before), rss_after_mib: mib(after) }, 'idle memory release'),
  });

  const drainTimeoutMs = positiveInteger(pick(values['drain-timeout-ms'], 'AIGATEWAY_DRAIN_TIMEOUT_MS'), 'drain-timeout-ms');
  const shutdownDelayMs = positiveInteger(pick(values['shutdown-delay-ms'], 'AIGATEWAY_SHUTDOWN_DELAY_MS'), 'shutdown-delay-ms');
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    idleRelease.stop();
    process.stderr.write(`aigateway: ${signal}, draining…\n`);
    gateway
      .close({ delayMs: shutdownDelayMs, timeoutMs: drainTimeoutMs })
      .then(() => requestLogging?.close()) // flushes the queued records
      .then(() => exchanges?.close())
      .then(() => redis?.connection.close()) // after the stores using it
      .then(
        () => {
          // The log is buffered: write what is left before leaving.
          logger.flush(() => process.exit(0));
        },
        () => process.exit(1),
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Announced once a signal drains it: a supervisor that stops it on this line gets exit 0.
  const metricsAt = gateway.metricsOrigin === undefined ? '' : `, metrics ${gateway.metricsOrigin}/metrics`;
  if (consoleOn) process.stderr.write(`aigateway console on ${gateway.origin}/console/ (sign in with a gateway key that has the admin scope)\n`);
  process.stderr.write(`aigateway listening on ${gateway.url} (state ${resolve(configPath)}, data ${dataDir}${metricsAt})\n`);
  return -1; // keep running
}

/** In a pod, the state ConfigMap and Secret watched through the API server (see kube-state-source.ts). */
function kubeStateSourceOf(
  configMapName: string | undefined,
  secretName: string | undefined,
  env: Record<string, string | undefined>,
  logger: ReturnType<typeof createGatewayLogger>,
): Parameters<typeof startGateway>[0]['stateSource'] {
  if (configMapName === undefined) return undefined;
  const connection = inClusterConnection(env);
  if (connection === undefined) {
    logger.warn({ configmap: configMapName }, 'no in-cluster ServiceAccount token: the state follows the mounted files only');
    return undefined;
  }
  return (host) =>
    startKubeStateSource({
      ...connection,
      configMapName,
      secretName,
      env,
      guardrailCompiler: BUILTIN_GUARDRAIL_COMPILER,
      initialHash: host.currentHash(),
      onReload: (outcome) => host.apply(outcome, 'kube-api'),
      onError: (message) => logger.warn({ err: { message } }, 'state watch failed; retrying (the mounted files are the fallback)'),
    });
}

/** The request log store (GET /v1/logs, /v1/analytics/summary): SQLite by default, PostgreSQL when asked. */
function requestLoggingOf(
  values: Record<string, string | boolean | undefined>,
  dataDir: string,
  metrics: GatewayMetrics,
  logger: ReturnType<typeof createGatewayLogger>,
): Promise<RequestLogging | undefined> {
  const flag = (name: string): string | undefined => (typeof values[name] === 'string' ? values[name] : undefined);
  const kind = pick(flag('log-store'), 'AIGATEWAY_LOG_STORE', 'sqlite') ?? 'sqlite';
  if (!isLogStoreKind(kind)) throw new UsageError(`log-store must be sqlite, postgres or off, got "${kind}"`);
  const databaseUrl = pick(flag('database-url'), 'DATABASE_URL');
  if (kind === 'postgres' && databaseUrl === undefined) throw new UsageError('log-store postgres needs --database-url (or DATABASE_URL)');
  const retentionDays = positiveInteger(pick(flag('log-retention-days'), 'AIGATEWAY_LOG_RETENTION_DAYS', '30'), 'log-retention-days') ?? 30;
  return startRequestLogging({ kind, dataDir, databaseUrl, retentionDays, metrics, logger });
}

/** Headers and bodies in the log store's database (a SQLite file of their own standalone), with its retention. */
async function exchangeLoggingOf(values: Record<string, string | boolean | undefined>, dataDir: string, logger: ReturnType<typeof createGatewayLogger>) {
  const flag = (name: string): string | undefined => (typeof values[name] === 'string' ? values[name] : undefined);
  const kind = pick(flag('log-store'), 'AIGATEWAY_LOG_STORE', 'sqlite') === 'postgres' ? 'postgres' : 'sqlite';
  const retentionDays = positiveInteger(pick(flag('log-retention-days'), 'AIGATEWAY_LOG_RETENTION_DAYS', '30'), 'log-retention-days') ?? 30;
  const { startExchangeLogging } = await import('../proxy/logs/exchange-logging.ts');
  return startExchangeLogging({ kind, dataDir, databaseUrl: pick(flag('database-url'), 'DATABASE_URL'), retentionDays, logger });
}

/** In a cluster the control plane is the operator (forwarded); standalone it runs in-process. */
/** Gateway-managed files and batches: PostgreSQL when DATABASE_URL is set (replicas share it), else SQLite. */
function batchesPluginOf(values: Record<string, string | boolean | undefined>, dataDir: string): ReturnType<typeof batchesPlugin> {
  const flag = (name: string): string | undefined => (typeof values[name] === 'string' ? values[name] : undefined);
  const databaseUrl = pick(flag('database-url'), 'DATABASE_URL');
  const concurrency = positiveInteger(pick(flag('batch-concurrency'), 'AIGATEWAY_BATCH_CONCURRENCY'), 'batch-concurrency');
  if (concurrency === 0) throw new UsageError('batch-concurrency must be at least 1');
  return batchesPlugin({
    store: databaseUrl === undefined ? { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') } : { kind: 'postgres', connectionString: databaseUrl },
    concurrency,
    leaseMs: positiveInteger(pick(flag('batch-lease-ms'), 'AIGATEWAY_BATCH_LEASE_MS'), 'batch-lease-ms'),
  });
}

async function controlPlaneOf(url: string | undefined): Promise<typeof controlPlaneRoutes> {
  if (url === undefined) return controlPlaneRoutes;
  if (URL.parse(url) === null) throw new UsageError(`control-plane-url must be a URL, got "${url}"`);
  const { controlPlaneForward } = await import('../operator/api/control-plane-forward.ts');
  return () => controlPlaneForward({ baseUrl: url });
}

/**
 * Rate-limit counters, the response cache and the semantic index on one Redis connection;
 * the stores' close leaves it open, `connection.close()` after theirs ends it.
 */
async function redisStoresOf(url: string, budgetLeases: boolean) {
  const [{ openRedisConnection }, { RedisCounterStore }, { RedisResponseCache }, { RedisSemanticIndex }, { RedisBudgetStore }] = await Promise.all([
    import('../proxy/redis/fail-fast-redis.ts'),
    import('../proxy/ratelimit/redis-counter-store.ts'),
    import('../proxy/cache/redis-response-cache.ts'),
    import('../proxy/cache/redis-semantic-index.ts'),
    import('../proxy/budgets/redis-budget-store.ts'),
  ]);
  const connection = openRedisConnection(url);
  return {
    connection,
    counterStore: new RedisCounterStore({ connection }),
    budgetStore: new RedisBudgetStore({ connection, leases: budgetLeases ? {} : false }),
    cacheStore: new RedisResponseCache({ connection }),
    semanticIndex: new RedisSemanticIndex({ connection }),
  };
}

// `npm start` must work with no setup and never with a fixed default key: when the state
// file asks for GATEWAY_API_KEY and it is unset, this run gets a random one, printed once.
function ensureGatewayApiKey(statePath: string, env: Record<string, string | undefined>): void {
  if (env['GATEWAY_API_KEY'] !== undefined && env['GATEWAY_API_KEY'] !== '') return;
  let text: string;
  try {
    text = readFileSync(statePath, 'utf8');
  } catch {
    return; // the loader reports the unreadable file
  }
  if (!text.includes('${GATEWAY_API_KEY')) return;
  const key = `gw-${randomBytes(24).toString('base64url')}`;
  env['GATEWAY_API_KEY'] = key;
  process.stderr.write(`GATEWAY_API_KEY is not set; this run's gateway API key is:\n  ${key}\n`);
}

async function validate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { credentials: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const file = positionals[0];
  if (file === undefined) throw new UsageError('validate needs a file: aigateway validate <file>');
  // Unset variables are reported as errors except GATEWAY_API_KEY, which serve generates.
  const env = { GATEWAY_API_KEY: `gw-${randomBytes(24).toString('base64url')}`, ...process.env };
  const result = await loadStateFromFiles(
    { statePath: resolve(file), credentialsPath: values.credentials && resolve(values.credentials) },
    env,
    BUILTIN_GUARDRAIL_COMPILER,
  );
  const problems = result.ok ? result.warnings : [...result.errors, ...result.warnings];
  for (const problem of problems) process.stdout.write(`✗ ${problem}\n`);
  if (problems.length > 0) {
    process.stdout.write(`${file}: invalid (${problems.length} problem${problems.length === 1 ? '' : 's'})\n`);
    return 1;
  }
  process.stdout.write(`${file}: valid\n`);
  return 0;
}

/** Runs the command line and sets the exit code (the process stays up for `serve`/`operator`). */
export function runCli(argv: string[]): Promise<void> {
  return main(argv).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
        process.stderr.write(`aigateway: ${(error as Error).message}\n\n${USAGE}`);
        process.exitCode = 2;
      } else {
        // One line; the stack only when asked for (AIGATEWAY_LOG_LEVEL=debug).
        const known = error instanceof StateLoadError || error instanceof StartupError;
        const debug = process.env['AIGATEWAY_LOG_LEVEL'] === 'debug';
        const text = error instanceof Error ? (debug && !known ? (error.stack ?? error.message) : error.message) : String(error);
        process.stderr.write(`aigateway: ${text}\n`);
        process.exitCode = 1;
      }
      // Whatever a failed start left open (a socket, a worker) must not keep the process up.
      setTimeout(() => process.exit(), 1_000).unref();
    },
  );
}
