// `npm run bench:mcp [-- --calls 4000 --block 50]`: the overhead of a tools/call through the gateway's
// /mcp/{server} beside the same call made directly, both with the official SDK client on
// one session, calls one at a time (latency, not throughput). The upstream is an SDK
// McpServer with an echo tool over Streamable HTTP; gateway and upstream run in this
// process, so the numbers are the gateway's own work plus one loopback hop.
// The sides take turns in short blocks (50 calls each, the first side alternating): in one
// process, whatever drifts during a run (JIT tiering of shared node code, the heap growing
// towards a major GC, the machine's load) then falls on both sides alike. With two long
// blocks per side the overhead of the same code scattered from 0.05 to 0.85 ms run to run.
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
  /** Measured calls per side (default 4000). */
  readonly calls?: number;
  /** Unmeasured calls first, per side (default 500). */
  readonly warmup?: number;
  /** Calls per side per turn (default 50). */
  readonly block?: number;
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
  /** Calls per side per turn. */
  readonly block: number;
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

export async function benchMcpToolsCall(opts: McpBenchOptions = {}): Promise<McpBenchResult> {
  const calls = opts.calls ?? 4000;
  const warmup = opts.warmup ?? 500;
  const block = Math.max(1, Math.min(opts.block ?? 50, calls));
  const key = `bench-${randomUUID()}-${randomUUID()}`;
  const upstream = await startEchoUpstream();
  const upstreamUrl = upstream.url;
  const dir = mkdtempSync(join(tmpdir(), 'aigw-bench-mcp-'));
  const statePath = join(dir, 'state.yaml');
  writeFileSync(statePath, dump({ apiKeys: [{ id: 'bench', key }], egress: { allow: ['127.0.0.0/8'], clientAllow: [] }, mcpServers: [{ name: 'bench', url: upstreamUrl }] }));
  const gateway = await startGateway({ sources: { statePath }, env: {}, logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
  const clients: Client[] = [];
  try {
    const connect = async (url: string, headers: Record<string, string>): Promise<Client> => {
      const client = new Client({ name: 'bench', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
      clients.push(client);
      return client;
    };
    const sides = {
      direct: { client: await connect(upstreamUrl, {}), times: [] as number[], cpuMs: 0 },
      gateway: { client: await connect(`${gateway.origin}/mcp/bench`, { 'x-gateway-api-key': key }), times: [] as number[], cpuMs: 0 },
    };
    let index = 0;
    const run = async (side: (typeof sides)['direct'], count: number, measured: boolean): Promise<void> => {
      const cpuAtStart = process.cpuUsage();
      for (let done = 0; done < count; done++) {
        const started = process.hrtime.bigint();
        await side.client.callTool({ name: 'echo', arguments: { message: `call ${index++}` } });
        if (measured) side.times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      const used = process.cpuUsage(cpuAtStart);
      if (measured) side.cpuMs += (used.user + used.system) / 1000;
    };
    for (let turn = 0; turn * block < warmup; turn++) {
      await run(sides.direct, Math.min(block, warmup - turn * block), false);
      await run(sides.gateway, Math.min(block, warmup - turn * block), false);
    }
    for (let turn = 0; turn * block < calls; turn++) {
      const count = Math.min(block, calls - turn * block);
      const [first, second] = turn % 2 === 0 ? [sides.direct, sides.gateway] : [sides.gateway, sides.direct];
      await run(first, count, true);
      await run(second, count, true);
    }
    const direct = sides.direct.times.sort((a, b) => a - b);
    const through = sides.gateway.times.sort((a, b) => a - b);
    return { directP50: quantile(direct, 0.5), gatewayP50: quantile(through, 0.5), directP99: quantile(direct, 0.99),
      gatewayP99: quantile(through, 0.99),
      directCpuMs: sides.direct.cpuMs / direct.length,
      gatewayCpuMs: sides.gateway.cpuMs / through.length,
      callsPerSide: direct.length,
      block,
    };
  } finally {
    for (const client of clients) await client.close();
    await gateway.close({ timeoutMs: 1000 });
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An SDK McpServer with an echo tool over Streamable HTTP on 127.0.0.1 (one per session), for the MCP benches. */
export async function startEchoUpstream(): Promise<{ url: string; close: () => Promise<void> }> {
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
  return {
    url: `http://127.0.0.1:${(upstream.address() as { port: number }).port}/mcp`,
    async close() {
      for (const transport of transports.values()) await transport.close();
      upstream.closeAllConnections();
      upstream.close();
    },
  };
}

/** The result as the markdown table docs/mcp.md quotes. */
export function mcpBenchTable(result: McpBenchResult): string {
  return [
    `tools/call latency, ${result.callsPerSide} calls per side in turns of ${result.block} (ms), node ${process.version}`,
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
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '4000' }, warmup: { type: 'string', default: '500' }, block: { type: 'string', default: '50' } } });
  const result = await benchMcpToolsCall({ calls: Number(values.calls), warmup: Number(values.warmup), block: Number(values.block) });
  process.stdout.write(mcpBenchTable(result));
}
