import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLoadPool, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { cpuSeconds, rssMiB, waitUntilIdle } from './process-stats.ts';
import { markdownTable } from './report.ts';
import { BENCH_DIR, freePort, launchPrefix, ROUTING_CONFIG_IDS, spawnNode, startMock, tasksetAvailable, waitForHttp, type BenchProcess } from './targets.ts';

// A/B of aigateway variants — CLI flags and node flags — in one run: every variant is its
// own pinned gateway process, measured in interleaved closed-loop rounds (A B C A B C…),
// and compared by req/s per core. This is how docs/performance.md measures what a feature
// costs (e.g. `--log-store off`).
//   node bench/compare-variants.ts --variant 'default=' --variant 'no-store=--log-store off' \
//     --variant 'heap-cap=--max-old-space-size=64 ::' [--rounds 6] [--routing fallback]
// A variant is `name=[node flags ::] aigateway serve flags`.

const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true, default: [] },
    rounds: { type: 'string', default: '6' },
    'segment-ms': { type: 'string', default: '3000' },
    routing: { type: 'string', default: 'fallback' },
  },
});

const pin = tasksetAvailable() && (process.env['BENCH_RELAUNCHED'] === 'pinned' || cpus().length >= 2);
if (pin && process.env['BENCH_RELAUNCHED'] !== 'pinned') {
  const [command = 'taskset', ...args] = [...launchPrefix(1), process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  process.exit(spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, BENCH_RELAUNCHED: 'pinned' } }).status ?? 1);
}

interface Variant {
  readonly name: string;
  readonly nodeFlags: string[];
  readonly cliFlags: string[];
  process?: BenchProcess;
  origin?: string;
  completed: number;
  cpu: number;
}

const words = (text: string): string[] => text.split(/\s+/).filter((word) => word !== '');
const variants: Variant[] = values.variant.map((spec) => {
  const [name = '', rest = ''] = spec.split(/=(.*)/s);
  const [nodePart, cliPart] = rest.includes('::') ? rest.split('::') : ['', rest];
  return { name, nodeFlags: words(nodePart ?? ''), cliFlags: words(cliPart ?? ''), completed: 0, cpu: 0 };
});
if (variants.length < 2) throw new Error("give at least two --variant 'name=[node flags ::] cli flags'");
const routing = values.routing === 'single' ? 'single' : 'fallback';

const workDir = mkdtempSync(join(tmpdir(), 'aigateway-compare-'));
const apiKey = 'gw-bench-compare-variants-012345';
const mock = await startMock(workDir, pin ? 1 : undefined, { delayMs: 0, chunks: 10, chunkIntervalMs: 20 });
try {
  for (const variant of variants) {
    const port = await freePort();
    const args = [...variant.nodeFlags, 'bin/aigateway.js', 'serve', '--config', join(BENCH_DIR, 'aigateway-state.yaml'), '--port', String(port)];
    args.push('--data-dir', join(workDir, `${variant.name}-data`), '--log-file', join(workDir, `${variant.name}.log`), ...variant.cliFlags);
    const env = { ...process.env, BENCH_MOCK_URL: `${mock.origin}/v1`, BENCH_GATEWAY_KEY: apiKey };
    variant.process = spawnNode(variant.name, args, { core: pin ? 0 : undefined, workDir, env });
    variant.origin = `http://127.0.0.1:${port}`;
    await waitForHttp(`${variant.origin}/ready`, variant.process);
  }
  const spec: RequestSpec = {
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': apiKey, 'x-gateway-config': ROUTING_CONFIG_IDS[routing] },
    body: Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] })),
  };
  const pools = new Map(variants.map((variant) => [variant, createLoadPool(variant.origin ?? '', 64)]));
  for (const pool of pools.values()) await runClosedLoop(pool, spec, { connections: 16, durationMs: 1_500 });
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [variant, pool] of pools) {
      const pid = variant.process?.pid ?? 0;
      await waitUntilIdle(pid);
      const before = cpuSeconds(pid);
      const segment = await runClosedLoop(pool, spec, { connections: 50, durationMs: Number(values['segment-ms']) });
      variant.cpu += cpuSeconds(pid) - before;
      variant.completed += segment.completed;
      process.stderr.write(`round ${round} ${variant.name}: ${(segment.completed / (segment.wallMs / 1000)).toFixed(0)} req/s, errors ${segment.errors}\n`);
    }
  }
  const perCore = (variant: Variant): number => variant.completed / variant.cpu;
  const [base] = variants as [Variant, ...Variant[]]; // at least two, checked above
  const flagsOf = (variant: Variant): string => [...variant.nodeFlags, ...(variant.nodeFlags.length > 0 ? ['::'] : []), ...variant.cliFlags].join(' ');
  const rows = variants.map((variant) => [
    flagsOf(variant) === '' ? `${variant.name} (no flags)` : `${variant.name} \`${flagsOf(variant)}\``,
    perCore(variant).toFixed(0),
    `${((perCore(variant) / perCore(base) - 1) * 100).toFixed(0)}%`,
    rssMiB(variant.process?.pid ?? 0).toFixed(0),
  ]);
  process.stdout.write(`${markdownTable(['variant', 'req/s per core', `vs ${base.name}`, 'RSS MiB'], rows)}\n`);
  for (const pool of pools.values()) await pool.destroy();
} finally {
  for (const variant of variants) await variant.process?.stop();
  await mock.process.stop();
  rmSync(workDir, { recursive: true, force: true });
}
