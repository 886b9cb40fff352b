import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createLoadPool, percentile, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { cpuSeconds, rssMiB, waitUntilIdle } from './process-stats.ts';
import { markdownTable } from './report.ts';
import { BENCH_DIR, freePort, launchPrefix, REPO_ROOT, ROUTING_CONFIG_IDS, spawnNode, startMock, tasksetAvailable, waitForHttp, type BenchProcess } from './targets.ts';

// /v1/messages through the translated path (an OpenAI-format mock behind the Messages
// ingress), this tree against a baseline checkout of the gateway, in interleaved
// closed-loop rounds (before after before after…) on the same pinned core: what the ingress
// layer costs or saves per request.
//   git archive <commit> | tar -x -C /tmp/base && ln -s "$PWD/node_modules" /tmp/base/node_modules
//   node bench/messages-ingress.ts --baseline /tmp/base [--after <dir>, default this tree] [--stream] [--chat] [--rounds 6] [--routing fallback]

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    after: { type: 'string' },
    stream: { type: 'boolean', default: false },
    // The OpenAI ingress instead (POST /v1/chat/completions): what the layer costs the common path.
    chat: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '6' },
    'segment-ms': { type: 'string', default: '3000' },
    routing: { type: 'string', default: 'fallback' },
  },
});
const baseline = values.baseline === undefined ? undefined : resolve(values.baseline);
if (baseline === undefined || !existsSync(join(baseline, 'bin/aigateway.js'))) throw new Error('give --baseline <dir>: a checkout of the gateway with node_modules');

const pin = tasksetAvailable() && (process.env['BENCH_RELAUNCHED'] === 'pinned' || cpus().length >= 2);
if (pin && process.env['BENCH_RELAUNCHED'] !== 'pinned') {
  const [command = 'taskset', ...args] = [...launchPrefix(1), process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  process.exit(spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, BENCH_RELAUNCHED: 'pinned' } }).status ?? 1);
}

interface Side {
  readonly name: string;
  readonly root: string;
  process?: BenchProcess;
  origin?: string;
  completed: number;
  cpu: number;
  latencies: number[];
}

const sides: Side[] = [
  { name: 'before', root: baseline, completed: 0, cpu: 0, latencies: [] },
  { name: 'after', root: values.after === undefined ? REPO_ROOT : resolve(values.after), completed: 0, cpu: 0, latencies: [] },
];
const routing = values.routing === 'single' ? 'single' : 'fallback';
const workDir = mkdtempSync(join(tmpdir(), 'aigateway-messages-'));
const apiKey = 'gw-bench-messages-ingress-0123456';
const mock = await startMock(workDir, pin ? 1 : undefined, { delayMs: 0, chunks: 10, chunkIntervalMs: 0 });
try {
  for (const side of sides) {
    const port = await freePort();
    const args = [join(side.root, 'bin/aigateway.js'), 'serve', '--config', join(BENCH_DIR, 'aigateway-state.yaml'), '--port', String(port)];
    args.push('--data-dir', join(workDir, `${side.name}-data`), '--log-file', join(workDir, `${side.name}.log`));
    const env = { ...process.env, BENCH_MOCK_URL: `${mock.origin}/v1`, BENCH_GATEWAY_KEY: apiKey };
    side.process = spawnNode(side.name, args, { core: pin ? 0 : undefined, workDir, env });
    side.origin = `http://127.0.0.1:${port}`;
    await waitForHttp(`${side.origin}/ready`, side.process);
  }
  const stream = values.stream ? { stream: true } : {};
  const body = values.chat
    ? { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say hello in one short sentence.' }], ...stream }
    : { model: 'gpt-4o-mini', max_tokens: 64, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }], ...stream };
  const path = values.chat ? '/v1/chat/completions' : '/v1/messages';
  const spec: RequestSpec = {
    path,
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-gateway-api-key': apiKey, 'x-gateway-config': ROUTING_CONFIG_IDS[routing] },
    body: Buffer.from(JSON.stringify(body)),
  };
  const pools = new Map(sides.map((side) => [side, createLoadPool(side.origin ?? '', 64)]));
  for (const pool of pools.values()) await runClosedLoop(pool, spec, { connections: 16, durationMs: 1_500 });
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [side, pool] of pools) {
      const pid = side.process?.pid ?? 0;
      await waitUntilIdle(pid);
      const before = cpuSeconds(pid);
      const segment = await runClosedLoop(pool, spec, { connections: 50, durationMs: Number(values['segment-ms']) });
      side.cpu += cpuSeconds(pid) - before;
      side.completed += segment.completed;
      side.latencies.push(...segment.latencies);
      process.stderr.write(`round ${round} ${side.name}: ${(segment.completed / (segment.wallMs / 1000)).toFixed(0)} req/s, errors ${segment.errors}${segment.firstFailure === undefined ? '' : ` (${segment.firstFailure})`}\n`);
    }
  }
  const perCore = (side: Side): number => side.completed / side.cpu;
  const [base] = sides as [Side, Side];
  const rows = sides.map((side) => [
    side.name,
    perCore(side).toFixed(0),
    `${((perCore(side) / perCore(base) - 1) * 100).toFixed(1)}%`,
    percentile(side.latencies, 50).toFixed(2),
    percentile(side.latencies, 99).toFixed(2),
    rssMiB(side.process?.pid ?? 0).toFixed(0),
  ]);
  process.stdout.write(`POST ${path}${values.stream ? ' (stream)' : ''}, ${routing} routing${values.chat ? '' : ', translated to chat'} (50 connections)\n`);
  process.stdout.write(`${markdownTable(['gateway', 'req/s per core', 'vs before', 'p50 ms', 'p99 ms', 'RSS MiB'], rows)}\n`);
  for (const pool of pools.values()) await pool.destroy();
} finally {
  for (const side of sides) await side.process?.stop();
  await mock.process.stop();
  rmSync(workDir, { recursive: true, force: true });
}
