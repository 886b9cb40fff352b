// Idle RSS as the shared side-by-side harness starts aigateway (issue 32: ≤ 120 MiB): the CLI
// `serve` with NODE_ENV=production and the image's NODE_OPTIONS, a state like the harness's
// (API key, a saved fallback config, metrics, the SQLite log store on), the default compile
// cache (warm after the first start). Per start: the process's CPU when /health first answers,
// then VmRSS and its anonymous part after a short settle. The first start only warms the cache.
//   node bench/idle-rss.ts [--starts 6] [--settle-ms 2000] [-- <extra serve flags, e.g. --log-store off>]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { cpuSeconds, rssMiB } from './process-stats.ts';
import { AIGATEWAY_NODE_OPTIONS, freePort, spawnNode } from './targets.ts';

const { values, positionals } = parseArgs({ options: { starts: { type: 'string', default: '6' }, 'settle-ms': { type: 'string', default: '2000' } }, allowPositionals: true });
const starts = Number(values.starts);
const settleMs = Number(values['settle-ms']);

const workDir = mkdtempSync(join(tmpdir(), 'aigw-idle-rss-'));
const state = join(workDir, 'state.yaml');
writeFileSync(
  state,
  `apiKeys:
  - { id: bench, key: bench-key-0001-aigateway-bench-fixed-32c, workspace: default, scopes: [inference, admin] }
configs:
  - id: bench-fallback
    config:
      strategy: { mode: fallback }
      retry: { attempts: 2 }
      targets:
        - { provider: openai, api_key: sk-test, custom_host: "http://127.0.0.1:9/v1" }
        - { provider: openai, api_key: sk-test, custom_host: "http://127.0.0.1:9/v1" }
egress: { allow: ["127.0.0.0/8"] }
`,
);

function anonMiB(pid: number): number {
  const match = /^Anonymous:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return match?.[1] === undefined ? Number.NaN : Number(match[1]) / 1024;
}

const samples: { cpuMs: number; rss: number; anon: number }[] = [];
try {
  for (let index = 0; index <= starts; index++) {
    const port = await freePort();
    const env = { ...process.env, NODE_ENV: 'production', NODE_OPTIONS: AIGATEWAY_NODE_OPTIONS.join(' ') };
    const args = ['bin/aigateway.js', 'serve', '--config', state, '--port', String(port), '--host', '127.0.0.1', '--data-dir', join(workDir, `data-${index}`), ...positionals];
    const proc = spawnNode('aigateway', args, { core: undefined, workDir, env });
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const answer = await request(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        await answer?.body.dump();
        if (answer?.statusCode === 200) break;
        if (Date.now() > deadline) throw new Error(`no /health within 60 s (see ${proc.outputPath})`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const cpuMs = cpuSeconds(proc.pid) * 1000;
      await new Promise((resolve) => setTimeout(resolve, settleMs));
      if (index > 0) samples.push({ cpuMs, rss: rssMiB(proc.pid), anon: anonMiB(proc.pid) });
    } finally {
      await proc.stop();
    }
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}

const summary = (pick: (sample: (typeof samples)[number]) => number): string => {
  const sorted = samples.map(pick).sort((a, b) => a - b);
  return `median ${(sorted[Math.floor(sorted.length / 2)] ?? Number.NaN).toFixed(1)} (${(sorted[0] ?? Number.NaN).toFixed(1)}–${(sorted.at(-1) ?? Number.NaN).toFixed(1)})`;
};
process.stdout.write(`idle RSS, ${samples.length} warm starts${positionals.length > 0 ? ` with ${positionals.join(' ')}` : ''}, ${settleMs} ms after /health:\n`);
process.stdout.write(`  VmRSS MiB ${summary((sample) => sample.rss)}; anonymous MiB ${summary((sample) => sample.anon)}; CPU ms at /health ${summary((sample) => sample.cpuMs)}\n`);
