// What an active cost budget adds to a request: one aigateway process (CLI, as in
// production) with a usage-limit policy that matches requests sending metadata
// {"budget":"on"} and not those sending {"budget":"off"} — same route, same body, same
// headers' size — measured in interleaved closed-loop rounds. With --redis (REDIS_URL or
// redis://127.0.0.1:6379) a second process keeps its budget counters in Redis.
//   node bench/budget-overhead.ts [--seconds 3] [--rounds 3] [--connections 8] [--redis]
import { spawn, type ChildProcess } from 'node:child_process';
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
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '8' },
    redis: { type: 'boolean', default: false },
  },
});
const durationMs = Number(values.seconds) * 1000;
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const KEY = 'gw-bench-budget-key-00000-012345';
const POLICY = `bench-${process.pid}-${Date.now()}`;

const mock = await startMockUpstream(0, { ...DEFAULT_MOCK_OPTIONS, delayMs: 0 });
const mockOrigin = `http://127.0.0.1:${(mock.address() as AddressInfo).port}`;
const dir = await mkdtemp(join(tmpdir(), 'aigw-budget-bench-'));
await writeFile(
  join(dir, 'state.yaml'),
  [
    'apiKeys: [ { id: bench, key: "' + KEY + '" } ]',
    `providers: [ { slug: mock, provider: openai, apiKey: sk-bench, customHost: "${mockOrigin}/v1" } ]`,
    'egress: { allow: ["127.0.0.0/8"] }',
    // Never refuses: the cost of admission and settlement, not of 429s.
    `usageLimitPolicies: [ { id: ${POLICY}, type: cost, credit_limit: 1000000000, max_reservation: 1, conditions: [ { key: metadata.budget, value: "on" } ], group_by: [ { key: api_key } ] } ]`,
  ].join('\n'),
);

async function startGateway(name: string, env: Record<string, string>): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'aigateway.js'), 'serve', '--config', join(dir, 'state.yaml'), '--port', '0', '--data-dir', join(dir, `data-${name}`), '--log-file', '/dev/null', '--log-store', 'off'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
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

const { REDIS_URL: _unset, ...withoutRedis } = process.env;
const gateways = [{ name: 'memory', ...(await startGateway('memory', withoutRedis as Record<string, string>)) }];
if (values.redis) gateways.push({ name: 'redis', ...(await startGateway('redis', { REDIS_URL: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379' })) });

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

const rows: string[] = ['| store | policy | req/s | p50 ms | p99 ms |', '| --- | --- | ---: | ---: | ---: |'];
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
  for (const budget of ['off', 'on'] as const) {
    const t = totals[budget];
    const label = budget === 'on' ? 'active cost policy' : 'none';
    rows.push(`| ${gateway.name} | ${label}${t.errors > 0 ? ` (${t.errors} errors)` : ''} | ${Math.round((t.requests / t.ms) * 1000).toLocaleString('en')} | ${percentile(t.latencies, 50).toFixed(3)} | ${percentile(t.latencies, 99).toFixed(3)} |`);
  }
  await pool.close();
}
process.stdout.write(`${rows.join('\n')}\n`);

for (const gateway of gateways) {
  gateway.child.kill('SIGTERM');
  await once(gateway.child, 'exit');
}
mock.close();
await rm(dir, { recursive: true, force: true });
