// Starts a real gateway (port 0) on a temporary state file, with its request log captured
// in memory, for integration tests.
import { mkdtemp, rm, writeFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import OpenAI from 'openai';
import { controlPlaneRoutes } from '../../operator/api/control-plane.ts';
import type { RateLimitCounterStore } from '../../proxy/ratelimit/counter-store.ts';
import type { PolicyStore } from '../../proxy/ratelimit/policy-store.ts';
import type { BudgetStore } from '../../proxy/budgets/budget-store.ts';
import type { FailMode } from '../../proxy/ratelimit/rate-limiter.ts';
import type { FastifyPluginAsync } from 'fastify';
import type { RequestRecordSink } from '../../proxy/observability/request-record.ts';
import type { ResponseCacheStore } from '../../proxy/cache/response-cache-store.ts';
import type { SocketLimits } from '../../proxy/websocket/socket-registry.ts';
import { startGateway, type GatewayHost, type RunningGateway } from '../../proxy/start-gateway.ts';

export const TEST_GATEWAY_KEY = 'gw-test-key-0123456789-012345678';

export interface Harness {
  readonly gateway: RunningGateway;
  readonly dir: string;
  readonly statePath: string;
  /** Every log line written so far, parsed. */
  readonly logs: Array<Record<string, unknown>>;
  /** Raw log text (for secret scans). */
  logText(): string;
  /** Replaces the state file atomically (write + rename, like a ConfigMap update). */
  writeState(state: unknown): Promise<void>;
  /** An OpenAI SDK client pointed at the gateway with the given extra headers. */
  client(headers?: Record<string, string>, options?: { apiKey?: string; maxRetries?: number }): OpenAI;
  close(): Promise<void>;
}

export interface HarnessOptions {
  state: unknown;
  env?: Record<string, string>;
  bodyLimitBytes?: number;
  reloadIntervalMs?: number;
  retryBaseDelayMs?: number;
  now?: () => number;
  random?: () => number;
  counterStore?: RateLimitCounterStore;
  policyStore?: PolicyStore;
  budgetStore?: BudgetStore;
  rateLimitFailMode?: FailMode;
  plugins?: ReadonlyArray<(host: GatewayHost) => FastifyPluginAsync>;
  requestSink?: RequestRecordSink;
  metricsPort?: number;
  maxInFlight?: number;
  maxInFlightPerKey?: number;
  cacheStore?: ResponseCacheStore;
  /** Serve the web console at /console. */
  console?: boolean;
  /** WebSocket session limits (proxy/websocket/socket-registry.ts). */
  websocket?: Partial<SocketLimits>;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-test-'));
  const statePath = join(dir, 'gateway.yaml');
  await writeFile(statePath, toYaml(options.state));
  const logs: Array<Record<string, unknown>> = [];
  let raw = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const text = chunk.toString('utf8');
      raw += text;
      for (const line of text.split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const logger = pino({ base: undefined }, sink);
  const gateway = await startGateway({
    sources: { statePath },
    env: { ...options.env },
    logger,
    port: 0,
    host: '127.0.0.1',
    bodyLimitBytes: options.bodyLimitBytes,
    reloadIntervalMs: options.reloadIntervalMs ?? 200,
    retryBaseDelayMs: options.retryBaseDelayMs ?? 1,
    now: options.now,
    random: options.random,
    counterStore: options.counterStore,
    policyStore: options.policyStore,
    budgetStore: options.budgetStore,
    rateLimitFailMode: options.rateLimitFailMode,
    controlPlane: controlPlaneRoutes,
    plugins: options.plugins,
    requestSink: options.requestSink,
    metricsPort: options.metricsPort,
    maxInFlight: options.maxInFlight,
    maxInFlightPerKey: options.maxInFlightPerKey,
    cacheStore: options.cacheStore,
    console: options.console,
    websocket: options.websocket,
  });
  let counter = 0;
  return {
    gateway,
    dir,
    statePath,
    logs,
    logText: () => raw,
    async writeState(state) {
      const temporary = join(dir, `.gateway.yaml.${counter++}`);
      await writeFile(temporary, typeof state === 'string' ? state : toYaml(state));
      await rename(temporary, statePath);
    },
    client(headers = {}, clientOptions = {}) {
      return new OpenAI({
        baseURL: gateway.url,
        apiKey: clientOptions.apiKey ?? 'unused-provider-key',
        maxRetries: clientOptions.maxRetries ?? 0,
        defaultHeaders: { 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
      });
    },
    async close() {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function toYaml(state: unknown): string {
  return typeof state === 'string' ? state : dump(state);
}

/** A minimal valid state: one gateway key and the given extra sections. */
export function baseState(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiKeys: [
      { id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] },
      { id: 'no-inference', key: 'gw-admin-only-key-0000-012345678', scopes: ['admin'] },
    ],
    // The mocks listen on loopback, which the egress guard denies unless allowed: for saved
    // providers (allow) and for hosts the test's requests choose (clientAllow).
    egress: { allow: ['127.0.0.0/8', '::1'], clientAllow: ['127.0.0.0/8', '::1'] },
    ...extra,
  };
}

/** A deterministic PRNG (mulberry32) for distribution tests. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
