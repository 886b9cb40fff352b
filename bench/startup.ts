// Start-up and idle memory: how long from `node bin/aigateway.js serve` (the production
// config of the benchmark: auth, saved fallback config, metrics, log file, SQLite log store)
// to the first answered chat completion, and the process's RSS once it sits idle. The first
// start runs with an empty compile cache (a pod's first start without the image's seed), the
// others warm (the image's seed, or any later start). The bare proxy is measured the same way
// for reference. After the idle sample each start serves a short load (`--load` requests, 50 at a
// time) and its RSS is taken again. `--node-options` replaces aigateway's V8 flags (the image's
// NODE_OPTIONS) to compare them, e.g. `--node-options=--max-semi-space-size=4`.
//   node bench/startup.ts [--starts 5] [--idle-ms 2000] [--load 2000] [--node-options "<flags>"]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool, request } from 'undici';
import { rssMiB } from './process-stats.ts';
import { markdownTable } from './report.ts';
import { AIGATEWAY_NODE_OPTIONS, BENCH_DIR, freePort, spawnNode, startMock, type BenchProcess } from './targets.ts';

const { values } = parseArgs({
  options: {
    starts: { type: 'string', default: '5' },
    'idle-ms': { type: 'string', default: '2000' },
    load: { type: 'string', default: '2000' },
    'node-options': { type: 'string' },
  },
});
const starts = Number(values.starts);
const idleMs = Number(values['idle-ms']);
const loadRequests = Number(values.load);
const nodeOptions = values['node-options'] === undefined ? AIGATEWAY_NODE_OPTIONS : values['node-options'].split(/\s+/).filter(Boolean);
const LOAD_CONNECTIONS = 50;
const POLL_MS = 2;

const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello.' }] }));

/** Polls `path` until it answers 200; the time is measured by the caller. */
async function firstAnswer(origin: string, path: string, headers: Record<string, string>, proc: BenchProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const answer = await request(`${origin}${path}`, { method: 'POST', headers, body });
      await answer.body.dump();
      if (answer.statusCode === 200) return;
      throw new Error(`${proc.name} answered ${answer.statusCode}`);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith(proc.name)) throw error;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  throw new Error(`${proc.name} did not answer within 30 s (see ${proc.outputPath})`);
}

interface Sample {
  readonly startMs: number;
  readonly firstAnswerRss: number;
  readonly idleRss: number;
  readonly loadRss: number;
}

/** `loadRequests` answered requests, LOAD_CONNECTIONS at a time (every answer must be a 200). */
async function shortLoad(origin: string, headers: Record<string, string>): Promise<void> {
  const pool = new Pool(origin, { connections: LOAD_CONNECTIONS });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next++ < loadRequests) {
      const answer = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers, body });
      await answer.body.dump();
      if (answer.statusCode !== 200) throw new Error(`the load got a ${answer.statusCode}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: LOAD_CONNECTIONS }, worker));
  } finally {
    await pool.close();
  }
}

async function measure(name: 'aigateway' | 'bare', workDir: string, mockOrigin: string, cacheDir: string): Promise<Sample> {
  const port = await freePort();
  const key = 'gw-bench-startup-key-0123456789abcdef';
  const env = { ...process.env, BENCH_MOCK_URL: `${mockOrigin}/v1`, BENCH_GATEWAY_KEY: key, AIGATEWAY_COMPILE_CACHE_DIR: cacheDir };
  const args =
    name === 'aigateway'
      ? [...nodeOptions, 'bin/aigateway.js', 'serve', '--config', join(BENCH_DIR, 'aigateway-state.yaml'), '--port', String(port), '--data-dir', join(workDir, `data-${port}`), '--log-file', join(workDir, 'requests.log')]
      : ['bench/bare-proxy.ts', '--port', String(port), '--upstream', mockOrigin];
  const headers: Record<string, string> =
    name === 'aigateway'
      ? { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-config': 'bench-fallback' }
      : { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };
  const started = performance.now();
  const proc = spawnNode(name, args, { core: undefined, workDir, env });
  try {
    const origin = `http://127.0.0.1:${port}`;
    await firstAnswer(origin, '/v1/chat/completions', headers, proc);
    const startMs = performance.now() - started;
    const firstAnswerRss = rssMiB(proc.pid);
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    const idleRss = rssMiB(proc.pid);
    await shortLoad(origin, headers);
    return { startMs, firstAnswerRss, idleRss, loadRss: rssMiB(proc.pid) };
  } finally {
    await proc.stop();
  }
}

const workDir = mkdtempSync(join(tmpdir(), 'aigw-startup-'));
const mock = await startMock(workDir, undefined, { delayMs: 0, chunks: 1, chunkIntervalMs: 0 });
try {
  const rows: string[][] = [];
  for (const name of ['aigateway', 'bare'] as const) {
    const cacheDir = join(workDir, `compile-cache-${name}`);
    const samples: Sample[] = [];
    for (let index = 0; index < starts; index++) samples.push(await measure(name, workDir, mock.origin, cacheDir));
    const [cold, ...warm] = samples as [Sample, ...Sample[]];
    const median = (pick: (sample: Sample) => number): number => {
      const sorted = warm.map(pick).sort((a, b) => a - b);
      return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
    };
    rows.push([
      name,
      cold.startMs.toFixed(0),
      `${median((sample) => sample.startMs).toFixed(0)} (${warm.map((sample) => sample.startMs.toFixed(0)).join(', ')})`,
      median((sample) => sample.firstAnswerRss).toFixed(0),
      median((sample) => sample.idleRss).toFixed(0),
      median((sample) => sample.loadRss).toFixed(0),
    ]);
  }
  process.stdout.write(`\n### Start-up and idle memory (${starts} starts each; the first with an empty compile cache; aigateway with ${nodeOptions.join(' ') || 'no V8 flags'})\n\n`);
  process.stdout.write(
    `${markdownTable(['process', 'cold start → first answer ms', 'warm start → first answer ms, median (all)', 'RSS at first answer MiB', `RSS idle ${idleMs / 1000} s later MiB`, `RSS after ${loadRequests} requests MiB`], rows)}\n`,
  );
} finally {
  await mock.process.stop();
  rmSync(workDir, { recursive: true, force: true });
}
