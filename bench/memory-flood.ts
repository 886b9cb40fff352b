// RSS of the gateway across a flood of requests whose every input value is new: trace ids,
// metadata values, cache namespaces and model names (the red-team shape). The gateway runs as
// in production (the CLI, the bench state, log store on); RSS is sampled as the count grows.
//   node bench/memory-flood.ts [--requests 100000] [--connections 32]
// Prints a table; RSS should be flat (within 10%) from the first sample to the last.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { rssMiB } from './process-stats.ts';
import { startAigateway, startMock } from './targets.ts';

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '100000' }, connections: { type: 'string', default: '32' } },
});
const total = Number(values.requests);
const connections = Number(values.connections);

const workDir = await mkdtemp(join(tmpdir(), 'aigw-flood-'));
const mock = await startMock(workDir, undefined, { delayMs: 0, chunks: 3, chunkIntervalMs: 0 });
const gateway = await startAigateway({ core: undefined, workDir, mockOrigin: mock.origin, routing: 'fallback' });
const pool = new Pool(gateway.origin, { connections, pipelining: 1 });

const samples: Array<{ sent: number; rss: number }> = [{ sent: 0, rss: rssMiB(gateway.process.pid) }];
const sampleEvery = Math.max(1, Math.floor(total / 10));
let sent = 0;
let failed = 0;

async function worker(): Promise<void> {
  while (sent < total) {
    const n = sent++;
    const stream = n % 4 === 0;
    const { statusCode, body } = await pool.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: {
        ...gateway.headers,
        'x-gateway-trace-id': `flood-${n}-${Math.random().toString(36).slice(2)}`,
        'x-gateway-metadata': JSON.stringify({ user: `user-${n}`, session: `s-${n}` }),
        'x-gateway-cache-namespace': `ns-${n}`,
      },
      body: JSON.stringify({ model: `model-${n}`, stream, messages: [{ role: 'user', content: `hello ${n}` }] }),
    });
    await body.dump();
    if (statusCode !== 200) failed++;
    if (n > 0 && n % sampleEvery === 0) samples.push({ sent: n, rss: rssMiB(gateway.process.pid) });
  }
}

const started = Date.now();
await Promise.all(Array.from({ length: connections }, worker));
samples.push({ sent: total, rss: rssMiB(gateway.process.pid) });
const seconds = (Date.now() - started) / 1000;

const first = samples[1] ?? samples[0];
const last = samples[samples.length - 1];
process.stdout.write(`| requests sent | gateway RSS (MiB) |\n|---:|---:|\n`);
for (const sample of samples) process.stdout.write(`| ${sample.sent} | ${sample.rss.toFixed(0)} |\n`);
if (first !== undefined && last !== undefined) {
  const growth = ((last.rss - first.rss) / first.rss) * 100;
  process.stdout.write(`\n${total} requests in ${seconds.toFixed(1)} s, ${failed} not 200; RSS from the first sample to the last: ${growth >= 0 ? '+' : ''}${growth.toFixed(1)}%\n`);
}
await pool.close();
await gateway.process.stop();
await mock.process.stop();
await rm(workDir, { recursive: true, force: true });
