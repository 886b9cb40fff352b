// The cache's HIT path next to a direct call to the mock upstream: a HIT must be faster.
// `node bench/cache-hit.ts [--seconds 5] [--delay-ms 20]` — one aigateway process (CLI, as in production,
// with a `cache: simple` config), the bench mock, interleaved closed-loop rounds.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLoadPool, percentile, runClosedLoop, type RequestSpec } from './load-generator.ts';
import { DEFAULT_MOCK_OPTIONS, startMockUpstream } from './mock-upstream.ts';
import { REPO_ROOT } from './targets.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' }, 'delay-ms': { type: 'string', default: '20' } },
});
const durationMs = Number(values.seconds) * 1000;
const rounds = Number(values.rounds);
const KEY = 'gw-bench-cache-key-000000-012345';

// A model never answers in 0 ms; the mock's delay stands for the provider's own latency.
const mock = await startMockUpstream(0, { ...DEFAULT_MOCK_OPTIONS, delayMs: Number(values['delay-ms']) });
const mockOrigin = `http://127.0.0.1:${(mock.address() as AddressInfo).port}`;
const dir = await mkdtemp(join(tmpdir(), 'aigw-cache-bench-'));
await writeFile(
  join(dir, 'state.yaml'),
  [
    'apiKeys: [ { id: bench, key: "' + KEY + '" } ]',
    `providers: [ { slug: mock, provider: openai, apiKey: sk-bench, customHost: "${mockOrigin}/v1" } ]`,
    'configs: [ { id: cached, config: { provider: "@mock", cache: { mode: simple } } } ]',
    'egress: { allow: ["127.0.0.0/8"] }',
  ].join('\n'),
);
const gateway = spawn(
  process.execPath,
  [join(REPO_ROOT, 'bin', 'aigateway.js'), 'serve', '--config', join(dir, 'state.yaml'), '--port', '0', '--data-dir', join(dir, 'data'), '--log-file', '/dev/null', '--log-store', 'off'],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
const gatewayOrigin = await new Promise<string>((resolve, reject) => {
  let stderr = '';
  gateway.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    const match = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
    if (match?.[1] !== undefined) resolve(match[1]);
  });
  gateway.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${stderr}`)));
});

const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'cache me' }] }));
const direct: RequestSpec = { path: '/v1/chat/completions', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body };
const hit: RequestSpec = {
  path: '/v1/chat/completions',
  headers: { 'content-type': 'application/json', 'x-gateway-api-key': KEY, 'x-gateway-config': 'cached' },
  body,
};

const pools = { direct: createLoadPool(mockOrigin, 50), hit: createLoadPool(gatewayOrigin, 50) };
await runClosedLoop(pools.hit, hit, { connections: 1, durationMs: 200 }); // fills the cache
const totals = { direct: { requests: 0, ms: 0, latencies: [] as number[] }, hit: { requests: 0, ms: 0, latencies: [] as number[] } };
for (let round = 0; round < rounds; round++) {
  for (const name of ['direct', 'hit'] as const) {
    const result = await runClosedLoop(pools[name], name === 'direct' ? direct : hit, { connections: 50, durationMs });
    totals[name].requests += result.completed;
    totals[name].ms += result.wallMs;
    totals[name].latencies.push(...result.latencies);
  }
}

const row = (name: 'direct' | 'hit') => {
  const t = totals[name];
  return `| ${name === 'direct' ? 'direct to the mock' : 'aigateway cache HIT'} | ${Math.round((t.requests / t.ms) * 1000).toLocaleString('en')} | ${percentile(t.latencies, 50).toFixed(2)} | ${percentile(t.latencies, 99).toFixed(2)} |`;
};
process.stdout.write(['| path | req/s (50 connections) | p50 ms | p99 ms |', '| --- | ---: | ---: | ---: |', row('direct'), row('hit'), ''].join('\n'));

gateway.kill('SIGTERM');
await once(gateway, 'exit');
await pools.direct.close();
await pools.hit.close();
mock.close();
await rm(dir, { recursive: true, force: true });
