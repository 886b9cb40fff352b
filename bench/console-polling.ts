// What a web console left open costs the gateway's traffic: one aigateway process (CLI, as in
// production, SQLite request log on, console on) under a closed-loop chat load, measured in
// interleaved rounds without and with a simulated console beside it, polling at the console's
// real intervals (console/src/pages/*.js):
//   Requests page   GET /v1/logs?limit=50&from=<a week ago>   every 3 s, one in flight at a time
//   Configuration   GET /v1/configuration                      every 10 s
//   Spend & health  12 × GET /v1/analytics/summary (one per 5-minute bucket of the last hour,
//                   one after another) when the page is opened: once per measured segment
// The request log fills with the load itself, so the console's reads run against a growing
// table, as they would. Returns the throughput and p50/p99 of the load with and without.
//   node bench/console-polling.ts [--seconds 10] [--rounds 2] [--connections 8]
// `benchConsolePolling(options)` runs the same measurement for bench/run.ts (--features console).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLoadPool, percentile, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { DEFAULT_MOCK_OPTIONS, startMockUpstream } from './mock-upstream.ts';
import { REPO_ROOT } from './targets.ts';

export interface ConsolePollingOptions {
  /** Seconds per measured segment (default 10: a few polls of each kind fit in one). */
  readonly seconds?: number;
  /** Interleaved rounds of (without, with) (default 2). */
  readonly rounds?: number;
  /** Concurrent connections of the load (default 8). */
  readonly connections?: number;
}

export interface ConsolePollingRow {
  readonly console: 'none' | 'polling';
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
}

export interface ConsoleReads {
  readonly logs: number;
  readonly configuration: number;
  readonly summaries: number;
  /** Median wall time of one console read as the console saw it (ms). */
  readonly p50Ms: number;
  readonly maxMs: number;
  readonly failures: number;
}

export interface ConsolePollingResult {
  readonly rows: readonly ConsolePollingRow[];
  /** Throughput with the console minus without, in percent of without. */
  readonly throughputDeltaPct: number;
  /** p50 with the console minus without (ms). */
  readonly p50DeltaMs: number;
  readonly reads: ConsoleReads;
  /** Records in the request log at the end (what the console's reads ran against). */
  readonly logRecords: number | undefined;
  /** The rows as a Markdown table, with the console's reads under it. */
  readonly table: string;
}

const KEY = 'gw-bench-console-key-0000-012345';
const LOG_POLL_MS = 3_000;
const CONFIGURATION_POLL_MS = 10_000;
const SUMMARY_BUCKETS = 12;
const WEEK_MS = 7 * 86_400_000;
const HOUR_MS = 3_600_000;

/** Measures the chat load with and without a console polling beside it. */
export async function benchConsolePolling(options: ConsolePollingOptions = {}): Promise<ConsolePollingResult> {
  const durationMs = (options.seconds ?? 10) * 1000;
  const rounds = options.rounds ?? 2;
  const connections = options.connections ?? 8;
  const mock = await startMockUpstream(0, { ...DEFAULT_MOCK_OPTIONS, delayMs: 0 });
  const mockOrigin = `http://127.0.0.1:${(mock.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), 'aigw-console-bench-'));
  let gateway: { child: ChildProcess; origin: string } | undefined;
  try {
    await writeFile(
      join(dir, 'state.yaml'),
      [
        `apiKeys: [ { id: bench, key: "${KEY}", scopes: [inference, admin] } ]`,
        `providers: [ { slug: mock, provider: openai, apiKey: sk-bench, customHost: "${mockOrigin}/v1" } ]`,
        'egress: { allow: ["127.0.0.0/8"] }',
      ].join('\n'),
    );
    gateway = await startGateway(dir);
    const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] }));
    const spec: RequestSpec = {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': KEY, 'x-gateway-provider': '@mock' },
      body,
    };
    const probe = await fetch(`${gateway.origin}/v1/chat/completions`, { method: 'POST', headers: spec.headers, body });
    if (probe.status !== 200) throw new Error(`probe: ${probe.status} ${(await probe.text()).slice(0, 300)}`);
    const pool = createLoadPool(gateway.origin, connections);
    await runClosedLoop(pool, spec, { connections, durationMs: 1_000 });
    const totals = { none: { requests: 0, ms: 0, errors: 0, latencies: [] as number[] }, polling: { requests: 0, ms: 0, errors: 0, latencies: [] as number[] } };
    const reads = { logs: 0, configuration: 0, summaries: 0, failures: 0, times: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      // ABBA: the order alternates, so a machine getting busier does not favour either.
      for (const variant of round % 2 === 0 ? (['none', 'polling'] as const) : (['polling', 'none'] as const)) {
        const poller = variant === 'polling' ? startConsole(gateway.origin, reads) : undefined;
        const result = await runClosedLoop(pool, spec, { connections, durationMs });
        await poller?.stop();
        const total = totals[variant];
        total.requests += result.completed;
        total.errors += result.errors;
        total.ms += result.wallMs;
        total.latencies.push(...result.latencies);
      }
    }
    await pool.close();
    const logRecords = await countRecords(gateway.origin);
    const rows: ConsolePollingRow[] = (['none', 'polling'] as const).map((variant) => {
      const total = totals[variant];
      return {
        console: variant,
        requestsPerSecond: Math.round((total.requests / total.ms) * 1000),
        p50Ms: percentile(total.latencies, 50),
        p99Ms: percentile(total.latencies, 99),
        errors: total.errors,
      };
    });
    const [without, withConsole] = rows as [ConsolePollingRow, ConsolePollingRow];
    const consoleReads: ConsoleReads = {
      logs: reads.logs,
      configuration: reads.configuration,
      summaries: reads.summaries,
      p50Ms: reads.times.length === 0 ? Number.NaN : percentile(reads.times, 50),
      maxMs: reads.times.length === 0 ? Number.NaN : Math.max(...reads.times),
      failures: reads.failures,
    };
    const throughputDeltaPct = ((withConsole.requestsPerSecond - without.requestsPerSecond) / without.requestsPerSecond) * 100;
    const p50DeltaMs = withConsole.p50Ms - without.p50Ms;
    return { rows, throughputDeltaPct, p50DeltaMs, reads: consoleReads, logRecords, table: tableOf(rows, throughputDeltaPct, p50DeltaMs, consoleReads, logRecords) };
  } finally {
    if (gateway !== undefined && gateway.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await once(gateway.child, 'exit');
    }
    mock.close();
    await rm(dir, { recursive: true, force: true });
  }
}

interface ReadCounters {
  logs: number;
  configuration: number;
  summaries: number;
  failures: number;
  times: number[];
}

/** A console tab left open: the Requests poll, the Configuration refresh, one Spend page open. */
function startConsole(origin: string, reads: ReadCounters): { stop(): Promise<void> } {
  let stopped = false;
  const read = async (path: string, counter: 'logs' | 'configuration' | 'summaries'): Promise<void> => {
    const started = performance.now();
    try {
      const response = await fetch(`${origin}${path}`, { headers: { 'x-gateway-api-key': KEY } });
      await response.arrayBuffer();
      if (!response.ok) reads.failures++;
    } catch {
      reads.failures++;
    }
    reads.times.push(performance.now() - started);
    reads[counter]++;
  };
  // One read of each kind in flight at most, like the console (a slow store delays the next, never piles up).
  const every = (intervalMs: number, work: () => Promise<void>): Promise<void> =>
    (async () => {
      while (!stopped) {
        const next = performance.now() + intervalMs;
        await work();
        const wait = next - performance.now();
        if (wait > 0 && !stopped) await sleepUnlessStopped(wait);
      }
    })();
  const sleepers = new Set<() => void>();
  const sleepUnlessStopped = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      sleepers.add(wake);
    });
  const spend = async (): Promise<void> => {
    const to = Date.now();
    const step = HOUR_MS / SUMMARY_BUCKETS;
    for (let index = 0; index < SUMMARY_BUCKETS && !stopped; index++) {
      const from = to - HOUR_MS + index * step;
      await read(`/v1/analytics/summary?from=${Math.round(from)}&to=${Math.round(from + step)}&group_by=model`, 'summaries');
    }
  };
  const loops = [
    every(LOG_POLL_MS, () => read(`/v1/logs?limit=50&from=${new Date(Date.now() - WEEK_MS).toISOString()}`, 'logs')),
    every(CONFIGURATION_POLL_MS, () => read('/v1/configuration', 'configuration')),
    spend(),
  ];
  return {
    async stop() {
      stopped = true;
      for (const wake of sleepers) wake();
      await Promise.all(loops);
    },
  };
}

async function countRecords(origin: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${origin}/v1/analytics/summary?from=0`, { headers: { 'x-gateway-api-key': KEY } });
    return ((await response.json()) as { total?: { requests?: number } }).total?.requests;
  } catch {
    return undefined;
  }
}

function tableOf(rows: readonly ConsolePollingRow[], throughputDeltaPct: number, p50DeltaMs: number, reads: ConsoleReads, logRecords: number | undefined): string {
  const lines = ['| console | req/s | p50 ms | p99 ms |', '| --- | ---: | ---: | ---: |'];
  for (const row of rows) {
    lines.push(`| ${row.console}${row.errors > 0 ? ` (${row.errors} errors)` : ''} | ${row.requestsPerSecond.toLocaleString('en')} | ${row.p50Ms.toFixed(3)} | ${row.p99Ms.toFixed(3)} |`);
  }
  lines.push(
    '',
    `With the console: throughput ${throughputDeltaPct >= 0 ? '+' : ''}${throughputDeltaPct.toFixed(1)} %, p50 ${p50DeltaMs >= 0 ? '+' : ''}${p50DeltaMs.toFixed(3)} ms. ` +
      `The console made ${reads.logs} log reads, ${reads.configuration} configuration reads and ${reads.summaries} summary reads ` +
      `(p50 ${reads.p50Ms.toFixed(1)} ms, max ${reads.maxMs.toFixed(1)} ms${reads.failures > 0 ? `, ${reads.failures} failed` : ''})` +
      `${logRecords === undefined ? '' : ` against a request log of ${logRecords.toLocaleString('en')} records`}.`,
  );
  return lines.join('\n');
}

async function startGateway(dir: string): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'aigateway.js'), 'serve', '--config', join(dir, 'state.yaml'), '--port', '0', '--data-dir', join(dir, 'data'), '--log-file', '/dev/null', '--log-store', 'sqlite', '--console'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: process.env },
  );
  const origin = await new Promise<string>((resolveOrigin, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
      if (match?.[1] !== undefined) resolveOrigin(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${stderr}`)));
  });
  return { child, origin };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '8' },
    },
  });
  const result = await benchConsolePolling({ seconds: Number(values.seconds), rounds: Number(values.rounds), connections: Number(values.connections) });
  process.stdout.write(`${result.table}\n`);
}
