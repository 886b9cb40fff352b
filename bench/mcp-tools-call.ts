// `npm run bench:mcp [-- --calls 2000]`: the overhead of a tools/call through the gateway's
// /mcp/{server} beside the same call made directly, both with the official SDK client on
// one session, calls one at a time (latency, not throughput). The upstream is an SDK
// McpServer with an echo tool over Streamable HTTP; gateway and upstream run in this
// process, so the numbers are the gateway's own work plus one loopback hop.
// `benchMcpToolsCall(opts)` is the same measurement for other runners (bench/run.ts).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import { z } from 'zod';
import { startGateway } from '../proxy/start-gateway.ts';

export interface McpBenchOptions {
  /** Measured calls per side and round (default 2000). */
  readonly calls?: number;
  /** Unmeasured calls first, per side and round (default 300). */
  readonly warmup?: number;
  /** Interleaved rounds (default 2). */
  readonly rounds?: number;
}

/** Latency quantiles in ms, and how many calls each side made. */
export interface McpBenchResult {
  readonly directP50: number;
  readonly gatewayP50: number;
  readonly directP99: number;
  readonly gatewayP99: number;
  /** CPU time of this process per call (ms): the gateway's work shows here even on a loaded machine. */
  readonly directCpuMs: number;
  readonly gatewayCpuMs: number;
  readonly callsPerSide: number;
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

export async function benchMcpToolsCall(opts: McpBenchOptions = {}): Promise<McpBenchResult> {
  const calls = opts.calls ?? 2000;
  const warmup = opts.warmup ?? 300;
  const rounds = opts.rounds ?? 2;
  const key = `bench-${randomUUID()}-${randomUUID()}`;
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
  writeFileSync(statePath, dump({ apiKeys: [{ id: 'bench', key }], egress: { allow: ['127.0.0.0/8'], clientAllow: [] }, mcpServers: [{ name: 'bench', url: upstreamUrl }] }));
  const gateway = await startGateway({ sources: { statePath }, env: {}, logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
  try {
    const cpu = { direct: 0, gateway: 0 };
    const measure = async (url: string, headers: Record<string, string>, side: keyof typeof cpu): Promise<number[]> => {
      const client = new Client({ name: 'bench', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
      const times: number[] = [];
      let cpuAtStart = process.cpuUsage();
      for (let index = 0; index < warmup + calls; index++) {
        if (index === warmup) cpuAtStart = process.cpuUsage();
        const started = process.hrtime.bigint();
        await client.callTool({ name: 'echo', arguments: { message: `call ${index}` } });
        if (index >= warmup) times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      const used = process.cpuUsage(cpuAtStart);
      cpu[side] += (used.user + used.system) / 1000;
      await client.close();
      return times;
    };
    // Interleaved rounds, so drift (GC, CPU frequency) hits both sides alike.
    const direct: number[] = [];
    const through: number[] = [];
    for (let round = 0; round < rounds; round++) {
      direct.push(...(await measure(upstreamUrl, {}, 'direct')));
      through.push(...(await measure(`${gateway.origin}/mcp/bench`, { 'x-gateway-api-key': key }, 'gateway')));
    }
    direct.sort((a, b) => a - b);
    through.sort((a, b) => a - b);
    return { directP50: quantile(direct, 0.5), gatewayP50: quantile(through, 0.5), directP99: quantile(direct, 0.99),
      gatewayP99: quantile(through, 0.99),
      directCpuMs: cpu.direct / direct.length,
      gatewayCpuMs: cpu.gateway / through.length,
      callsPerSide: direct.length,
    };
  } finally {
    await gateway.close({ timeoutMs: 1000 });
    for (const transport of transports.values()) await transport.close();
    upstream.closeAllConnections();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The result as the markdown table docs/mcp.md quotes. */
export function mcpBenchTable(result: McpBenchResult): string {
  return [
    `tools/call latency, ${result.callsPerSide} calls per side (ms), node ${process.version}`,
    '',
    '| | p50 | p99 | CPU per call |',
    '|---|---|---|---|',
    `| direct | ${result.directP50.toFixed(3)} | ${result.directP99.toFixed(3)} | ${result.directCpuMs.toFixed(3)} |`,
    `| through the gateway | ${result.gatewayP50.toFixed(3)} | ${result.gatewayP99.toFixed(3)} | ${result.gatewayCpuMs.toFixed(3)} |`,
    `| overhead | ${(result.gatewayP50 - result.directP50).toFixed(3)} | ${(result.gatewayP99 - result.directP99).toFixed(3)} | ${(result.gatewayCpuMs - result.directCpuMs).toFixed(3)} |`,
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '2000' }, warmup: { type: 'string', default: '300' }, rounds: { type: 'string', default: '2' } } });
  const result = await benchMcpToolsCall({ calls: Number(values.calls), warmup: Number(values.warmup), rounds: Number(values.rounds) });
  process.stdout.write(mcpBenchTable(result));
}
