// `npm run bench:mcp [-- --calls 2000]`: the overhead of a tools/call through the gateway's
// /mcp/{server} beside the same call made directly, both with the official SDK client on
// one session, calls one at a time (latency, not throughput). The upstream is an SDK
// McpServer with an echo tool over Streamable HTTP; gateway and upstream run in this
// process, so the numbers are the gateway's own work plus one loopback hop.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import { z } from 'zod';
import { startGateway } from '../proxy/start-gateway.ts';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '2000' }, warmup: { type: 'string', default: '300' } } });
const calls = Number(values.calls);
const warmup = Number(values.warmup);
const KEY = `bench-${randomUUID()}-${randomUUID()}`;

const transports = new Map<string, StreamableHTTPServerTransport>();
const upstream = createServer((request, response) => {
  const id = request.headers['mcp-session-id'];
  const existing = typeof id === 'string' ? transports.get(id) : undefined;
  if (existing !== undefined) {
    void existing.handleRequest(request, response);
    return;
  }
  const server = new McpServer({ name: 'bench', version: '1' });
  server.registerTool('echo', { inputSchema: { message: z.string() } }, async ({ message }) => ({ content: [{ type: 'text', text: message }] }));
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sessionId) => {
      transports.set(sessionId, transport);
    },
  });
  void server.connect(transport).then(() => transport.handleRequest(request, response));
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}/mcp`;

const dir = mkdtempSync(join(tmpdir(), 'aigw-bench-mcp-'));
const statePath = join(dir, 'state.yaml');
writeFileSync(
  statePath,
  dump({ apiKeys: [{ id: 'bench', key: KEY }], egress: { allow: ['127.0.0.0/8'], clientAllow: [] }, mcpServers: [{ name: 'bench', url: upstreamUrl }] }),
);
const gateway = await startGateway({ sources: { statePath }, env: {}, logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });

async function measure(url: string, headers: Record<string, string>): Promise<number[]> {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const times: number[] = [];
  for (let index = 0; index < warmup + calls; index++) {
    const started = process.hrtime.bigint();
    await client.callTool({ name: 'echo', arguments: { message: `call ${index}` } });
    if (index >= warmup) times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  await client.close();
  return times.sort((a, b) => a - b);
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
// Interleaved rounds, so drift (GC, CPU frequency) hits both sides alike.
const direct: number[] = [];
const through: number[] = [];
for (let round = 0; round < 2; round++) {
  direct.push(...(await measure(upstreamUrl, {})));
  through.push(...(await measure(`${gateway.origin}/mcp/bench`, { 'x-gateway-api-key': KEY })));
}
direct.sort((a, b) => a - b);
through.sort((a, b) => a - b);
const row = (name: string, sorted: number[]): string => `| ${name} | ${quantile(sorted, 0.5).toFixed(3)} | ${quantile(sorted, 0.99).toFixed(3)} |`;
process.stdout.write(
  [
    `tools/call latency, ${direct.length} calls per side (ms), node ${process.version}`,
    '',
    '| | p50 | p99 |',
    '|---|---|---|',
    row('direct', direct),
    row('through the gateway', through),
    `| overhead | ${(quantile(through, 0.5) - quantile(direct, 0.5)).toFixed(3)} | ${(quantile(through, 0.99) - quantile(direct, 0.99)).toFixed(3)} |`,
    '',
  ].join('\n'),
);
await gateway.close({ timeoutMs: 1000 });
for (const transport of transports.values()) await transport.close();
upstream.closeAllConnections();
upstream.close();
rmSync(dir, { recursive: true, force: true });
