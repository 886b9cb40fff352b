// What an active cost budget adds to a request: one aigateway process (CLI, as in
// production) with a usage-limit policy that matches requests sending metadata
// {"budget":"on"} and not those sending {"budget":"off"} — same route, same body, same
// headers' size — measured in interleaved closed-loop rounds. With --redis (REDIS_URL or
// redis://127.0.0.1:6379) a second process keeps its budget counters in Redis, and through
// every round a probe here times the call a per-request reservation would make — the
// reservation script, with the previous request's settlement in the same write, as EVALSHAs
// on one ioredis connection, one call every PROBE_INTERVAL_MS, idle in between like a gateway
// between requests — so the run says itself whether the Redis policy costs more than that one
// round trip under the same load (issue 30's yardstick; with leases, the default, the gateway
// usually makes no call before forwarding). --no-leases runs the Redis gateway with
// --budget-leases off. The gateway's CPU per request comes from /proc.
//   node bench/budget-overhead.ts [--seconds 3] [--rounds 3] [--connections 8] [--redis]
// `benchBudgetOverhead(options)` runs the same measurement for bench/run.ts and returns the rows.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RESERVE_LUA, SETTLE_LUA } from '../proxy/budgets/redis-budget-store.ts';
import { createLoadPool, percentile, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { DEFAULT_MOCK_OPTIONS, startMockUpstream } from './mock-upstream.ts';
import { cpuSeconds, procAvailable } from './process-stats.ts';
import { REPO_ROOT } from './targets.ts';

export interface BudgetOverheadOptions {
  /** Seconds per measured round and variant (default 3). */
  readonly seconds?: number;
  /** Interleaved rounds (default 3). */
  readonly rounds?: number;
  /** Concurrent connections (default 8). */
  readonly connections?: number;
  /** Also measure a gateway whose budget counters live in Redis (default false). */
  readonly redis?: boolean;
  /** Default: REDIS_URL or redis://127.0.0.1:6379. */
  readonly redisUrl?: string;
  /** The Redis gateway reserves per request (--budget-leases off) instead of from leases. */
  readonly noLeases?: boolean;
}

export interface BudgetOverheadRow {
  readonly store: 'memory' | 'redis';
  readonly policy: 'none' | 'active cost policy';
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** The gateway process's CPU time (user + system, all threads) per completed request, µs; undefined without /proc. */
  readonly cpuUsPerRequest?: number | undefined;
}

/** The Redis round trip of the gateway's per-request call (reservation + previous settlement), timed from the bench in the same rounds. */
export interface RedisRoundTrip {
  readonly calls: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface BudgetOverheadResult {
  readonly rows: readonly BudgetOverheadRow[];
  /** p50 with the policy minus without, per store (ms). */
  readonly p50DeltaMs: Readonly<Partial<Record<'memory' | 'redis', number>>>;
  /** With Redis: the round trip of the gateway's call (EVALSHAs from a separate client, through the same rounds). */
  readonly redisRoundTrip?: RedisRoundTrip | undefined;
  /** With Redis: the policy's p50 cost is at most that round trip's p50. */
  readonly redisWithinRoundTrip?: boolean | undefined;
  /** The rows as a Markdown table, then one line per store judging the p50 difference. */
  readonly table: string;
}

/** The in-memory target: a policy adds at most this to the p50 (issue 30). */
export const MEMORY_TARGET_MS = 0.1;

const KEY = 'gw-bench-budget-key-00000-012345';

/** Measures requests with and without an active cost policy, in memory and (optionally) with Redis. */
export async function benchBudgetOverhead(options: BudgetOverheadOptions = {}): Promise<BudgetOverheadResult> {
  const durationMs = (options.seconds ?? 3) * 1000;
  const rounds = options.rounds ?? 3;
  const connections = options.connections ?? 8;
  const policy = `bench-${process.pid}-${Date.now()}`;
  const mock = await startMockUpstream(0, { ...DEFAULT_MOCK_OPTIONS, delayMs: 0 });
  const mockOrigin = `http://127.0.0.1:${(mock.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), 'aigw-budget-bench-'));
  const gateways: Array<{ name: 'memory' | 'redis'; child: ChildProcess; origin: string }> = [];
  let probe: RoundTripProbe | undefined;
  try {
    await writeFile(
      join(dir, 'state.yaml'),
      [
        'apiKeys: [ { id: bench, key: "' + KEY + '" } ]',
        `providers: [ { slug: mock, provider: openai, apiKey: sk-bench, customHost: "${mockOrigin}/v1" } ]`,
        'egress: { allow: ["127.0.0.0/8"] }',
        // Never refuses: the cost of admission and settlement, not of 429s.
        `usageLimitPolicies: [ { id: ${policy}, type: cost, credit_limit: 1000000000, max_reservation: 1, conditions: [ { key: metadata.budget, value: "on" } ], group_by: [ { key: api_key } ] } ]`,
      ].join('\n'),
    );
    const { REDIS_URL: _unset, ...withoutRedis } = process.env;
    gateways.push({ name: 'memory', ...(await startGateway(dir, 'memory', withoutRedis as Record<string, string>)) });
    if (options.redis === true) {
      const url = options.redisUrl ?? process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
      gateways.push({ name: 'redis', ...(await startGateway(dir, 'redis', { ...process.env, REDIS_URL: url, AIGATEWAY_BUDGET_LEASES: options.noLeases === true ? 'off' : 'on' } as Record<string, string>)) });
      probe = await startRoundTripProbe(url, policy);
    }
    const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] }));
    const spec = (budget: 'on' | 'off'): RequestSpec => ({
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': KEY, 'x-gateway-provider': '@mock', 'x-gateway-metadata': `{"budget":"${budget}"}` },
      body,
    });
    for (const gateway of gateways) {
      for (const budget of ['off', 'on'] as const) {
        const answer = await fetch(`${gateway.origin}/v1/chat/completions`, { method: 'POST', headers: spec(budget).headers, body });
        const text = await answer.text();
        if (answer.status !== 200) throw new Error(`${gateway.name} ${budget}: ${answer.status} ${text.slice(0, 300)}`);
      }
    }
    const rows: BudgetOverheadRow[] = [];
    const p50DeltaMs: Partial<Record<'memory' | 'redis', number>> = {};
    const cpu = procAvailable();
    const roundTrips: number[] = [];
    for (const gateway of gateways) {
      const pool = createLoadPool(gateway.origin, connections);
      await runClosedLoop(pool, spec('on'), { connections, durationMs: 500 });
      await runClosedLoop(pool, spec('off'), { connections, durationMs: 500 });
      // The probe runs through both variants' rounds alike (its few calls load both the same).
      const probing = gateway.name === 'redis' ? probe : undefined;
      probing?.start();
      const totals = {
        on: { requests: 0, ms: 0, errors: 0, cpuS: 0, latencies: [] as number[] },
        off: { requests: 0, ms: 0, errors: 0, cpuS: 0, latencies: [] as number[] },
      };
      for (let round = 0; round < rounds; round++) {
        for (const budget of ['off', 'on'] as const) {
          const cpuBefore = cpu ? cpuSeconds(gateway.child.pid as number) : 0;
          const result = await runClosedLoop(pool, spec(budget), { connections, durationMs });
          if (cpu) totals[budget].cpuS += cpuSeconds(gateway.child.pid as number) - cpuBefore;
          totals[budget].requests += result.completed;
          totals[budget].errors += result.errors;
          totals[budget].ms += result.wallMs;
          totals[budget].latencies.push(...result.latencies);
        }
      }
      roundTrips.push(...((await probing?.stop()) ?? []));
      await pool.close();
      for (const budget of ['off', 'on'] as const) {
        const t = totals[budget];
        rows.push({
          store: gateway.name,
          policy: budget === 'on' ? 'active cost policy' : 'none',
          requestsPerSecond: Math.round((t.requests / t.ms) * 1000),
          p50Ms: percentile(t.latencies, 50),
          p99Ms: percentile(t.latencies, 99),
          errors: t.errors,
          cpuUsPerRequest: cpu && t.requests > 0 ? Math.round((t.cpuS / t.requests) * 1e6) : undefined,
        });
      }
      p50DeltaMs[gateway.name] = percentile(totals.on.latencies, 50) - percentile(totals.off.latencies, 50);
    }
    const redisRoundTrip = roundTrips.length === 0 ? undefined : { calls: roundTrips.length, p50Ms: percentile(roundTrips, 50), p99Ms: percentile(roundTrips, 99) };
    const redisDelta = p50DeltaMs.redis;
    const redisWithinRoundTrip = redisRoundTrip === undefined || redisDelta === undefined ? undefined : redisDelta <= redisRoundTrip.p50Ms;
    const table = [tableOf(rows), '', ...verdictsOf(p50DeltaMs, redisRoundTrip)].join('\n');
    return { rows, p50DeltaMs, redisRoundTrip, redisWithinRoundTrip, table };
  } finally {
    for (const gateway of gateways) {
      if (gateway.child.exitCode === null) {
        gateway.child.kill('SIGTERM');
        await once(gateway.child, 'exit');
      }
    }
    await probe?.close();
    mock.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function tableOf(rows: readonly BudgetOverheadRow[]): string {
  const lines = ['| store | policy | req/s | p50 ms | p99 ms | gateway CPU µs/req |', '| --- | --- | ---: | ---: | ---: | ---: |'];
  for (const row of rows) {
    const cpu = row.cpuUsPerRequest === undefined ? 'n/a' : row.cpuUsPerRequest.toLocaleString('en');
    lines.push(`| ${row.store} | ${row.policy}${row.errors > 0 ? ` (${row.errors} errors)` : ''} | ${row.requestsPerSecond.toLocaleString('en')} | ${row.p50Ms.toFixed(3)} | ${row.p99Ms.toFixed(3)} | ${cpu} |`);
  }
  return lines.join('\n');
}

function verdictsOf(deltas: Partial<Record<'memory' | 'redis', number>>, roundTrip: RedisRoundTrip | undefined): string[] {
  const lines: string[] = [];
  const signed = (ms: number): string => `${ms >= 0 ? '+' : ''}${ms.toFixed(3)} ms`;
  if (deltas.memory !== undefined) {
    lines.push(`- memory: the policy adds ${signed(deltas.memory)} p50; target ≤ ${MEMORY_TARGET_MS} ms: ${deltas.memory <= MEMORY_TARGET_MS ? 'met' : 'NOT met'}.`);
  }
  if (deltas.redis !== undefined && roundTrip !== undefined) {
    lines.push(
      `- redis: the policy adds ${signed(deltas.redis)} p50; the round trip of its call (reservation + previous settlement, same scripts, from a separate client, ${roundTrip.calls.toLocaleString('en')} calls through the same rounds) ` +
        `p50 ${roundTrip.p50Ms.toFixed(3)} ms, p99 ${roundTrip.p99Ms.toFixed(3)} ms; within one round trip: ${deltas.redis <= roundTrip.p50Ms ? 'yes' : 'NO'}.`,
    );
  }
  return lines;
}

/** One probe call per this many ms: sparse enough not to load the rounds, idle in between. */
const PROBE_INTERVAL_MS = 2;

interface RoundTripProbe {
  start(): void;
  /** Stops after the call in flight; the latencies (ms) since start. */
  stop(): Promise<number[]>;
  close(): Promise<void>;
}

/** The gateway's call as bare EVALSHAs from this process: the one round trip a policy should cost. */
async function startRoundTripProbe(url: string, policy: string): Promise<RoundTripProbe> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  const [reserveSha, settleSha] = (await Promise.all([client.script('LOAD', RESERVE_LUA), client.script('LOAD', SETTLE_LUA)])) as [string, string];
  // Same shape as the gateway's counter (prefix, hash tag, one key, a token per call), never near its limit.
  const key = `aigw:{budget}:${policy}-round-trip:all:api_key=bench`;
  let running: Promise<number[]> | undefined;
  let stopping = false;
  let call = 0;
  const loop = async (): Promise<number[]> => {
    const latencies: number[] = [];
    while (!stopping) {
      call++;
      const sentAt = performance.now();
      // One write, as the gateway sends it: the last call's settlement, then this call's reservation.
      const replies = await client
        .pipeline()
        .evalsha(settleSha, 1, key, '20', '60', '-1', `probe-${call - 1}`)
        .evalsha(reserveSha, 1, key, '1000000000000000', '35', '60', `probe-${call}`)
        .exec()
        .catch(() => null);
      // A failed call times nothing (the gateway's rows show their own errors).
      if (replies?.every(([error]) => error === null) === true) latencies.push(performance.now() - sentAt);
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
    }
    return latencies;
  };
  return {
    start() {
      stopping = false;
      running = loop();
    },
    async stop() {
      stopping = true;
      const latencies = (await running) ?? [];
      running = undefined;
      return latencies;
    },
    async close() {
      await client.del(key).catch(() => undefined);
      client.disconnect();
    },
  };
}

async function startGateway(dir: string, name: string, env: Record<string, string>): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'aigateway.js'), 'serve', '--config', join(dir, 'state.yaml'), '--port', '0', '--data-dir', join(dir, `data-${name}`), '--log-file', '/dev/null', '--log-store', 'off'],
    { stdio: ['ignore', 'ignore', 'pipe'], env },
  );
  const origin = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${stderr}`)));
  });
  return { child, origin };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '3' },
      connections: { type: 'string', default: '8' },
      redis: { type: 'boolean', default: false },
      'no-leases': { type: 'boolean', default: false },
    },
  });
  const result = await benchBudgetOverhead({ seconds: Number(values.seconds), rounds: Number(values.rounds), connections: Number(values.connections), redis: values.redis, noLeases: values['no-leases'] });
  process.stdout.write(`${result.table}\n`);
}
