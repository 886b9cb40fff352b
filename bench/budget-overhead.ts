// What an active cost budget adds to a request: one aigateway process (CLI, as in
// production) with a usage-limit policy that matches requests sending metadata
// {"budget":"on"} and not those sending {"budget":"off"} — same route, same body, same
// headers' size — measured in interleaved closed-loop rounds. With --redis (REDIS_URL or
// redis://127.0.0.1:6379) a second process keeps its budget counters in Redis.
//   node bench/budget-overhead.ts [--seconds 3] [--rounds 3] [--connections 8] [--redis]
// `benchBudgetOverhead(options)` runs the same measurement for bench/run.ts and returns the rows.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLoadPool, percentile, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { DEFAULT_MOCK_OPTIONS, startMockUpstream } from './mock-upstream.ts';
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
}

export interface BudgetOverheadRow {
  readonly store: 'memory' | 'redis';
  readonly policy: 'none' | 'active cost policy';
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
}

export interface BudgetOverheadResult {
  readonly rows: readonly BudgetOverheadRow[];
  /** p50 with the policy minus without, per store (ms). */
  readonly p50DeltaMs: Readonly<Partial<Record<'memory' | 'redis', number>>>;
  /** The rows as a Markdown table. */
  readonly table: string;
}

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
      gateways.push({ name: 'redis', ...(await startGateway(dir, 'redis', { ...process.env, REDIS_URL: url } as Record<string, string>)) });
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
    for (const gateway of gateways) {
      const pool = createLoadPool(gateway.origin, connections);
      await runClosedLoop(pool, spec('on'), { connections, durationMs: 500 });
      await runClosedLoop(pool, spec('off'), { connections, durationMs: 500 });
      const totals = { on: { requests: 0, ms: 0, errors: 0, latencies: [] as number[] }, off: { requests: 0, ms: 0, errors: 0, latencies: [] as number[] } };
      for (let round = 0; round < rounds; round++) {
        for (const budget of ['off', 'on'] as const) {
          const result = await runClosedLoop(pool, spec(budget), { connections, durationMs });
          totals[budget].requests += result.completed;
          totals[budget].errors += result.errors;
          totals[budget].ms += result.wallMs;
          totals[budget].latencies.push(...result.latencies);
        }
      }
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
        });
      }
      p50DeltaMs[gateway.name] = percentile(totals.on.latencies, 50) - percentile(totals.off.latencies, 50);
    }
    return { rows, p50DeltaMs, table: tableOf(rows) };
  } finally {
    for (const gateway of gateways) {
      if (gateway.child.exitCode === null) {
        gateway.child.kill('SIGTERM');
        await once(gateway.child, 'exit');
      }
    }
    mock.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function tableOf(rows: readonly BudgetOverheadRow[]): string {
  const lines = ['| store | policy | req/s | p50 ms | p99 ms |', '| --- | --- | ---: | ---: | ---: |'];
  for (const row of rows) {
    lines.push(`| ${row.store} | ${row.policy}${row.errors > 0 ? ` (${row.errors} errors)` : ''} | ${row.requestsPerSecond.toLocaleString('en')} | ${row.p50Ms.toFixed(3)} | ${row.p99Ms.toFixed(3)} |`);
  }
  return lines.join('\n');
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
    },
  });
  const result = await benchBudgetOverhead({ seconds: Number(values.seconds), rounds: Number(values.rounds), connections: Number(values.connections), redis: values.redis });
  process.stdout.write(`${result.table}\n`);
}
