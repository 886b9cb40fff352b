import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { loadStateFromFiles, type StateSources } from './config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from './guardrails/builtin-guardrail-compiler.ts';
import { watchStateSources, type ReloadOutcome, type StateWatcher } from './config/state-watcher.ts';
import { createGatewayServer, type GatewayServer } from './gateway-server.ts';
import { createGatewayMetrics, type GatewayMetrics } from './observability/gateway-metrics.ts';
import { setTimeout as sleepFor } from 'node:timers/promises';
import type { FastifyPluginAsync } from 'fastify';
import type { GatewayState } from './config/gateway-state.ts';
import { stateEmbedder } from './cache/cache-embedder.ts';
import { MemoryResponseCache } from './cache/memory-response-cache.ts';
import { MemorySemanticIndex } from './cache/memory-semantic-index.ts';
import { ResponseCache } from './cache/response-cache.ts';
import type { ResponseCacheStore } from './cache/response-cache-store.ts';
import type { SemanticIndex } from './cache/semantic-cache.ts';
import type { RequestRecordSink } from './observability/request-record.ts';
import type { RateLimitCounterStore } from './ratelimit/counter-store.ts';
import { MemoryCounterStore } from './ratelimit/memory-counter-store.ts';
import { FilePolicyStore, type PolicyStore } from './ratelimit/policy-store.ts';
import { RateLimiter, type FailMode } from './ratelimit/rate-limiter.ts';
import { BudgetEnforcer } from './budgets/budget-enforcer.ts';
import { MemoryBudgetStore, type BudgetStore } from './budgets/budget-store.ts';
import { FileUsageLimitStore, type UsageLimitStore } from './budgets/usage-limit-store.ts';
import { CircuitBreakers, CIRCUIT_STATE_VALUE } from './resilience/circuit-breakers.ts';
import type { RoutingRuntime } from './routing/execute-plan.ts';
import { createUpstreamAgent } from './upstream/upstream-agent.ts';
import { mcpPlugin } from './mcp/mcp-plugin.ts';
import { websocketPlugin } from './websocket/websocket-plugin.ts';
import type { SocketLimits } from './websocket/socket-registry.ts';
import { consolePlugin } from './console/console-routes.ts';
import type { ClusterViewFetch } from './console/cluster-view.ts';
import { SECRET_KEY_ENV } from './batches/batch-credential-seal.ts';
import { setPlainAnswerLimits } from './upstream/plain-answer-limits.ts';
import { StateLoadError } from './errors.ts';
import type { ControlPlaneHost, GatewayHost, InjectRequest, InjectResponse } from './gateway-host.ts';

// The hosts moved to gateway-host.ts; kept here for callers that import them from the root.
export type { ControlPlaneHost, GatewayHost, InjectRequest, InjectResponse } from './gateway-host.ts';

// Wires a gateway from a state file: load → serve → watch and hot-swap. The CLI's
// `serve` and the integration tests both start gateways through here.

export interface StartGatewayOptions {
  sources: StateSources;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  port?: number;
  host?: string;
  bodyLimitBytes?: number;
  /** How often the state files are polled for changes (ms). */
  reloadIntervalMs?: number;
  metrics?: GatewayMetrics;
  /** Base of the exponential retry backoff (ms); default 250. */
  retryBaseDelayMs?: number;
  /** Rate-limit counters (memory standalone, Redis in a cluster); default: memory. */
  counterStore?: RateLimitCounterStore;
  /** What happens when the counter store fails: admit (open, default) or refuse (closed). */
  rateLimitFailMode?: FailMode;
  /** Where API-created policies live; default: memory only. */
  policyStore?: PolicyStore;
  /** Budget counters (memory standalone, Redis shared by replicas); default: memory. */
  budgetStore?: BudgetStore;
  /** Where API-created usage-limit policies live; default: memory only. */
  usageLimitStore?: UsageLimitStore;
  /**
   * Control-plane routes mounted in-process (standalone). Built by the composition root from
   * operator/api, given the gateway's live state and policy store.
   */
  controlPlane?: (host: ControlPlaneHost) => FastifyPluginAsync;
  /** In a cluster: the operator's view of replicas and custom resources (GET /v1/configuration). */
  clusterView?: ClusterViewFetch;
  /**
   * More route plugins (batches, files, fine-tuning, logs…), built by the composition root
   * with what they need of the running gateway. Registered after the inference routes.
   */
  plugins?: ReadonlyArray<(host: GatewayHost) => FastifyPluginAsync>;
  /** WebSocket session limits (caps, message size, keep-alive, durations); defaults in websocket/socket-registry.ts. */
  websocket?: Partial<SocketLimits> | undefined;
  /** Receives a record of every finished /v1 request (the request log store). */
  requestSink?: RequestRecordSink;
  /** Serve the web console at /console (docs/console.md); default off. */
  console?: boolean;
  /** Serve /metrics on this port instead of the client-facing one (e.g. one only the cluster's Prometheus can reach). */
  metricsPort?: number;
  /** Most /v1 requests in flight at once; beyond it, a fast 503 with retry-after (default 2048). */
  maxInFlight?: number;
  /** Largest plain answer read whole to be translated or checked (plain-answer-limits.ts; default 16 MiB). */
  maxParsedAnswerBytes?: number;
  /** Most /v1 requests one API key may have in flight (default: a quarter of maxInFlight); beyond it, a fast 429. */
  maxInFlightPerKey?: number;
  /** The response cache's store (default: memory, bounded) and semantic index (default: memory). */
  cacheStore?: ResponseCacheStore;
  semanticIndex?: SemanticIndex;
  /**
   * A second source of state changes besides the files (in a cluster: the API watch of
   * kube-state-source.ts). While it says healthy, file changes are ignored: the mounted
   * files lag by the kubelet's sync and must not roll a newer state back.
   */
  stateSource?: (host: StateSourceHost) => ExternalStateSource;
  /** Runs once the server is built, before it listens (the CLI hands start-up's memory back here). */
  beforeListen?: () => void;
  /** Clock for breakers and retry budgets (tests inject a fake one). */
  now?: () => number;
  random?: () => number;
}

export interface RunningGateway {
  /** Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8787/v1 */
  readonly url: string;
  readonly origin: string;
  readonly server: GatewayServer;
  readonly metrics: GatewayMetrics;
  readonly watcher: StateWatcher;
  readonly breakers: CircuitBreakers;
  readonly policyStore: PolicyStore;
  /** Origin of the separate metrics listener, when one was asked for. */
  readonly metricsOrigin: string | undefined;
  /**
   * Graceful shutdown: readiness goes false, (after `delayMs`) new connections are refused,
   * in-flight requests and streams finish; after `timeoutMs` the rest are cut.
   */
  close(drain?: DrainOptions): Promise<void>;
}

export interface DrainOptions {
  /** Wait this long after readiness turns false before refusing connections (default 0). */
  delayMs?: number;
  /** Cut whatever is still open after this long (default 30 s). */
  timeoutMs?: number;
}

export interface StateSourceHost {
  /** Hash of the state being served. */
  currentHash(): string;
  apply(outcome: ReloadOutcome, source: string): void;
}

export interface ExternalStateSource {
  healthy(): boolean;
  close(): Promise<void>;
}

export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const { logger } = options;
  const loaded = await loadStateFromFiles(options.sources, options.env, BUILTIN_GUARDRAIL_COMPILER);
  for (const warning of loaded.warnings) logger.warn({ warning }, 'state warning');
  if (!loaded.ok) throw new StateLoadError(loaded.errors);

  const metrics = options.metrics ?? createGatewayMetrics();
  metrics.setConfigHash(loaded.state.hash);
  let live = loaded.state;
  const dispatcher = createUpstreamAgent({ egress: () => live.egress, clientEgress: () => live.clientEgress });
  const now = options.now ?? Date.now;
  const breakers = new CircuitBreakers({
    now,
    onTransition({ label, from, to }) {
      metrics.circuitState.set({ target: label }, CIRCUIT_STATE_VALUE[to]);
      metrics.circuitTransitions.inc({ target: label, from, to });
      logger.warn({ target: label, from, to }, 'circuit breaker transition');
    },
  });
  const routing: RoutingRuntime = {
    dispatcher,
    breakers,
    metrics,
    now,
    random: options.random ?? Math.random,
    retryBaseDelayMs: options.retryBaseDelayMs ?? 250,
    logger,
    sleep: (ms, signal) => sleepFor(ms, undefined, { signal }).catch(() => undefined),
  };
  const cacheStore: ResponseCacheStore = options.cacheStore ?? new MemoryResponseCache({ now });
  const semanticIndex = options.semanticIndex ?? new MemorySemanticIndex();
  await cacheStore.connect?.(2_000).catch((error: unknown) => {
    logger.warn({ err: { message: (error as Error).message } }, 'cache store not reachable at start; serving anyway');
  });
  metrics.watchCacheSize(() => cacheStore.stats());
  const embedder = stateEmbedder(() => live, dispatcher);
  const buildCache = (state: GatewayState): ResponseCache =>
    new ResponseCache({
      store: cacheStore,
      index: semanticIndex,
      embedder,
      threshold: state.document.cache.semanticThreshold,
      now,
      onError(error, operation) {
        metrics.cacheErrors.inc({ operation });
        logger.warn({ operation, err: { message: (error as Error).message } }, 'cache store unavailable; treated as a miss');
      },
    });
  let responseCache = buildCache(loaded.state);
  const counterStore: RateLimitCounterStore = options.counterStore ?? new MemoryCounterStore();
  await counterStore.connect?.(2_000).catch((error: unknown) => {
    logger.warn({ err: { message: (error as Error).message } }, 'rate-limit store not reachable at start; serving anyway');
  });
  const policyStore = options.policyStore ?? FilePolicyStore.inMemory();
  const rateLimiter = new RateLimiter({ store: counterStore, metrics, logger, failMode: options.rateLimitFailMode ?? 'open', now });
  const budgetStore: BudgetStore = options.budgetStore ?? new MemoryBudgetStore({ now });
  await budgetStore.connect?.(2_000).catch((error: unknown) => {
    logger.warn({ err: { message: (error as Error).message } }, 'budget store not reachable at start; serving anyway');
  });
  const usageLimitStore = options.usageLimitStore ?? FileUsageLimitStore.inMemory();
  const budgets = new BudgetEnforcer({ store: budgetStore, metrics, logger, dispatcher, now });
  const controlPlaneHost: ControlPlaneHost = { currentState: () => live, policyStore, usageLimitStore, budgets };
  let injector: ((request: InjectRequest) => Promise<InjectResponse>) | undefined;
  const gatewayHost: GatewayHost = {
    ...controlPlaneHost,
    logger,
    metrics,
    dispatcher,
    rateLimiter,
    dynamicPolicies: () => policyStore.snapshot(),
    inject: (request) => {
      if (injector === undefined) return Promise.reject(new Error('gateway is not built yet'));
      return injector(request);
    },
  };
  if (options.maxParsedAnswerBytes !== undefined) setPlainAnswerLimits(options.maxParsedAnswerBytes);
  const server = createGatewayServer({
    initialState: loaded.state,
    logger,
    metrics,
    inference: {
      routing,
      rateLimiter,
      dynamicPolicies: () => policyStore.snapshot(),
      budgets,
      dynamicUsageLimits: () => usageLimitStore.snapshot(),
      guardrails: { metrics, logger, dispatcher },
      get cache() {
        return responseCache;
      },
    },
    controlPlane: options.controlPlane?.(controlPlaneHost),
    clusterView: options.clusterView,
    plugins: [
      // The MCP endpoint (/mcp): light until the first MCP request.
      mcpPlugin({
        currentState: () => live,
        logger,
        registry: metrics.registry,
        dispatcher,
        requestSink: options.requestSink,
        rateLimiter,
        dynamicPolicies: () => policyStore.snapshot(),
        budgets,
        dynamicUsageLimits: () => usageLimitStore.snapshot(),
        secretKey: options.env[SECRET_KEY_ENV],
        now,
      }),
      // WebSocket transports: /v1/responses upgraded and /v1/realtime (docs/websocket.md).
      websocketPlugin({
        logger,
        rateLimiter,
        dynamicPolicies: () => policyStore.snapshot(),
        budgets,
        dynamicUsageLimits: () => usageLimitStore.snapshot(),
        guardrails: { metrics, logger, dispatcher },
        limits: options.websocket,
      }),
      ...(options.plugins?.map((build) => build(gatewayHost)) ?? []),
      ...(options.console === true ? [consolePlugin()] : []),
    ],
    requestSink: options.requestSink,
    maxInFlight: options.maxInFlight,
    maxInFlightPerKey: options.maxInFlightPerKey,
    bodyLimitBytes: options.bodyLimitBytes,
    metricsRoute: options.metricsPort === undefined,
  });

  injector = async (request) => {
    const response = await server.app.inject({
      method: request.method,
      url: request.url,
      headers: request.headers,
      ...(request.body === undefined ? {} : { payload: request.body }),
    });
    return { statusCode: response.statusCode, headers: response.headers, body: response.body };
  };

  const applyOutcome = (outcome: ReloadOutcome, source: string): void => {
    for (const warning of outcome.warnings) logger.warn({ warning, source }, 'state warning');
    if (outcome.ok) {
      if (outcome.state.hash === live.hash) return; // both sources deliver each change
      server.swapState(outcome.state);
      live = outcome.state;
      dispatcher.closeDeniedConnections(); // a tightened egress policy also closes the warm connections it now denies
      responseCache = buildCache(outcome.state);
      metrics.setConfigHash(outcome.state.hash);
      metrics.configReloads.inc({ result: 'success' });
      logger.info({ config_hash: outcome.state.hash, source }, 'state reloaded');
    } else {
      metrics.configReloads.inc({ result: 'failure' });
      logger.error({ errors: outcome.errors, source }, 'state reload rejected; the last good state keeps serving');
    }
  };
  const external = options.stateSource?.({ currentHash: () => live.hash, apply: applyOutcome });
  const watcher = watchStateSources({
    sources: options.sources,
    env: options.env,
    guardrailCompiler: BUILTIN_GUARDRAIL_COMPILER,
    initialHash: loaded.state.hash,
    intervalMs: options.reloadIntervalMs,
    onReload(outcome) {
      if (external?.healthy() === true) return;
      applyOutcome(outcome, 'files');
    },
  });

  // While draining, answers carry `connection: close`: keep-alive clients move to other
  // replicas before this one stops accepting, instead of racing its close.
  let draining = false;
  server.app.addHook('onRequest', (_request, reply, done) => {
    if (draining) reply.header('connection', 'close');
    done();
  });
  let metricsServer: Server | undefined;
  try {
    if (options.beforeListen !== undefined) {
      await server.app.ready(); // the plugins are registered: what start-up builds is built
      options.beforeListen();
    }
    await server.app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
    metricsServer = options.metricsPort === undefined ? undefined : await serveMetrics(metrics, options.metricsPort, options.host ?? '127.0.0.1');
  } catch (error) {
    // A port in use: stop what already runs (reload timer, state watch, plugins' workers,
    // sockets) so the caller can report it and the process ends instead of hanging.
    watcher.close();
    await external?.close();
    await server.app.close();
    await dispatcher.closeAll();
    await Promise.allSettled([counterStore.close(), cacheStore.close(), semanticIndex.close(), budgetStore.close()]);
    throw error;
  }
  const address = server.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('gateway is not listening on TCP');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const origin = `http://${host}:${address.port}`;

  return {
    url: `${origin}/v1`,
    origin,
    server,
    metrics,
    watcher,
    breakers,
    policyStore,
    metricsOrigin: metricsServer === undefined ? undefined : originOf(metricsServer),
    async close(drain: DrainOptions = {}) {
      server.setReady(false);
      draining = true;
      // Let load balancers see the readiness change before we stop accepting.
      if (drain.delayMs !== undefined && drain.delayMs > 0) await sleepFor(drain.delayMs);
      watcher.close();
      await external?.close();
      const forced = setTimeout(() => server.app.server.closeAllConnections(), drain.timeoutMs ?? 30_000);
      forced.unref();
      try {
        await server.app.close();
      } finally {
        clearTimeout(forced);
      }
      metricsServer?.close();
      await dispatcher.closeAll();
      await counterStore.close();
      await budgetStore.close();
      await cacheStore.close();
      await semanticIndex.close();
    },
  };
}

async function serveMetrics(metrics: GatewayMetrics, port: number, host: string): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.url !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

function originOf(server: Server): string {
  const address = server.address();
  if (address === null || typeof address === 'string') return '';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
