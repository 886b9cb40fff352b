import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createLoadPool, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { markdownTable } from './report.ts';
import { AIGATEWAY_NODE_OPTIONS, freePort, launchPrefix, ROUTING_CONFIG_IDS, startMock, tasksetAvailable, waitForHttp, type BenchProcess } from './targets.ts';
import { harnessChatBody } from './harness-body.ts';

// A/B of two (or more) checkouts of aigateway under the harness's request: each tree runs
// its own `bin/aigateway.js serve` on bench/aigateway-state.yaml (auth, the saved fallback
// config with retry 2, metrics, log line, SQLite store), pinned to one core, and is loaded in
// interleaved closed-loop rounds (A B A B…). What is compared is CPU time per request, read
// from /proc/<pid>/task/*/schedstat (nanoseconds, every thread) and the main thread's alone —
// not req/s, which a shared machine moves by ±15% a round.
//   node bench/compare-trees.ts --tree base=/tmp/aigw-base --tree head=. [--rounds 8]
// A tree needs node_modules (a symlink to this checkout's is enough).

const { values } = parseArgs({
  options: {
    tree: { type: 'string', multiple: true, default: [] },
    rounds: { type: 'string', default: '8' },
    'segment-ms': { type: 'string', default: '3000' },
    connections: { type: 'string', default: '16' },
    routing: { type: 'string', default: 'fallback' },
  },
});

interface Tree {
  readonly name: string;
  readonly dir: string;
  process?: BenchProcess;
  origin?: string;
  completed: number;
  cpuNs: number;
  mainNs: number;
  perRound: number[];
}

const trees: Tree[] = values.tree.map((spec) => {
  const [name = '', dir = ''] = spec.split(/=(.*)/s);
  return { name, dir: resolve(dir), completed: 0, cpuNs: 0, mainNs: 0, perRound: [] };
});
if (trees.length < 2) throw new Error("give at least two --tree 'name=path'");
const pin = tasksetAvailable();

/** Nanoseconds on CPU of every thread of `pid`, and of its main thread. */
function schedNs(pid: number): { all: number; main: number } {
  let all = 0;
  let main = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      all += ns;
      if (tid === String(pid)) main = ns;
    } catch {
      // a thread that just ended
    }
  }
  return { all, main };
}

function spawnTree(tree: Tree, args: string[], env: NodeJS.ProcessEnv, workDir: string): BenchProcess {
  const outputPath = join(workDir, `${tree.name}.out`);
  const output = openSync(outputPath, 'a');
  const [command = process.execPath, ...rest] = [...launchPrefix(pin ? 0 : undefined), process.execPath, ...args];
  const child = spawn(command, rest, { cwd: tree.dir, env, stdio: ['ignore', output, output] });
  closeSync(output);
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    name: tree.name,
    pid: child.pid ?? 0,
    outputPath,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const workDir = mkdtempSync(join(tmpdir(), 'aigateway-trees-'));
const apiKey = 'gw-bench-compare-trees-0123456789';
const mock = await startMock(workDir, pin ? 1 : undefined, { delayMs: 0, chunks: 10, chunkIntervalMs: 20 });
try {
  for (const tree of trees) {
    const port = await freePort();
    const args = [...AIGATEWAY_NODE_OPTIONS, 'bin/aigateway.js', 'serve', '--config', join(tree.dir, 'bench', 'aigateway-state.yaml'), '--port', String(port)];
    args.push('--host', '127.0.0.1', '--data-dir', join(workDir, `${tree.name}-data`), '--log-file', join(workDir, `${tree.name}.log`));
    tree.process = spawnTree(tree, args, { ...process.env, BENCH_MOCK_URL: `${mock.origin}/v1`, BENCH_GATEWAY_KEY: apiKey }, workDir);
    tree.origin = `http://127.0.0.1:${port}`;
    await waitForHttp(`${tree.origin}/ready`, tree.process);
  }
  // The harness's body (bench/run.ts), byte for byte.
  const spec: RequestSpec = {
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': apiKey, 'x-gateway-config': ROUTING_CONFIG_IDS[values.routing === 'single' ? 'single' : 'fallback'] },
    body: harnessChatBody(false),
  };
  const connections = Number(values.connections);
  const pools = new Map(trees.map((tree) => [tree, createLoadPool(tree.origin ?? '', connections)]));
  for (const pool of pools.values()) await runClosedLoop(pool, spec, { connections, durationMs: 3_000 });
  for (let round = 1; round <= Number(values.rounds); round++) {
    // Alternate the order too: the second of a pair is not always the same tree.
    const order = round % 2 === 0 ? [...trees].reverse() : trees;
    for (const tree of order) {
      const pid = tree.process?.pid ?? 0;
      await new Promise((done) => setTimeout(done, 300));
      const before = schedNs(pid);
      const segment = await runClosedLoop(pools.get(tree) as ReturnType<typeof createLoadPool>, spec, { connections, durationMs: Number(values['segment-ms']) });
      await new Promise((done) => setTimeout(done, 100)); // the log store's batch of this segment
      const after = schedNs(pid);
      if (segment.errors > 0) process.stderr.write(`${tree.name}: ${segment.errors} errors (${segment.firstFailure})\n`);
      tree.cpuNs += after.all - before.all;
      tree.mainNs += after.main - before.main;
      tree.completed += segment.completed;
      tree.perRound.push((after.main - before.main) / 1000 / segment.completed);
      process.stderr.write(`round ${round} ${tree.name}: ${segment.completed} req, main thread ${((after.main - before.main) / 1000 / segment.completed).toFixed(1)} µs/req, all threads ${((after.all - before.all) / 1000 / segment.completed).toFixed(1)} µs/req\n`);
    }
  }
  const [base] = trees as [Tree, ...Tree[]];
  const median = (list: number[]): number => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;
  const rows = trees.map((tree) => [
    tree.name,
    String(tree.completed),
    (tree.cpuNs / 1000 / tree.completed).toFixed(1),
    (tree.mainNs / 1000 / tree.completed).toFixed(1),
    median(tree.perRound).toFixed(1),
    `${((tree.mainNs / tree.completed / (base.mainNs / base.completed) - 1) * 100).toFixed(1)}%`,
  ]);
  process.stdout.write(`${markdownTable(['tree', 'requests', 'CPU µs/req (all threads)', 'main thread µs/req', 'main, median round', `main vs ${base.name}`], rows)}\n`);
  for (const pool of pools.values()) await pool.destroy();
} finally {
  for (const tree of trees) await tree.process?.stop();
  await mock.process.stop();
  rmSync(workDir, { recursive: true, force: true });
}
