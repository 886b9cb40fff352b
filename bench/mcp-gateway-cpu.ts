// `npx node bench/mcp-gateway-cpu.ts [--calls 4000 --warmup 1500]`: the gateway's own CPU per
// tools/call on /mcp/{server}. The SDK client and the upstream (an SDK McpServer with an echo
// tool) run in a child process, so this process holds only the gateway: its CPU time per call
// is the gateway's work (HTTP server and client, fastify, hooks, proxy/mcp) without the
// client's and upstream's, and a profiler attached to it (node --cpu-prof, perf) sees nothing
// else. bench/mcp-tools-call.ts measures the latency a client sees instead.
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { dump } from 'js-yaml';
import { startEchoUpstream } from './mcp-tools-call.ts';
import { pino } from 'pino';

type PeerMessage = { upstream: string } | { warmed: true } | { times: number[] };
type GatewayMessage = { url: string; headers: Record<string, string>; calls: number; warmup: number } | { go: true } | { exit: true };

/** The child: upstream and client; warms up, waits for `go`, calls, reports latencies. */
async function peer(): Promise<void> {
  const send = (message: PeerMessage): void => void process.send?.(message);
  const upstream = await startEchoUpstream();
  let run: { client: Client; calls: number } | undefined;
  process.on('message', (message: GatewayMessage) => {
    void (async () => {
      if ('url' in message) {
        const client = new Client({ name: 'bench', version: '1' });
        await client.connect(new StreamableHTTPClientTransport(new URL(message.url), { requestInit: { headers: message.headers } }));
        for (let index = 0; index < message.warmup; index++) await client.callTool({ name: 'echo', arguments: { message: `warm-up ${index}` } });
        run = { client, calls: message.calls };
        send({ warmed: true });
      } else if ('go' in message && run !== undefined) {
        const times: number[] = [];
        for (let index = 0; index < run.calls; index++) {
          const started = process.hrtime.bigint();
          await run.client.callTool({ name: 'echo', arguments: { message: `call ${index}` } });
          times.push(Number(process.hrtime.bigint() - started) / 1e6);
        }
        await run.client.close();
        send({ times });
      } else if ('exit' in message) {
        await upstream.close();
        process.disconnect();
      }
    })();
  });
  send({ upstream: upstream.url });
}

/** This process: the gateway alone; CPU time of the process and of its main thread over the measured calls. */
async function gatewaySide(calls: number, warmup: number): Promise<string> {
  // The child gets none of this process's node flags (a --cpu-prof here profiles the gateway only).
  const child = fork(fileURLToPath(import.meta.url), ['--peer'], { stdio: 'inherit', execArgv: [] });
  const next = (): Promise<PeerMessage> => new Promise((resolve) => child.once('message', (message) => resolve(message as PeerMessage)));
  const { upstream } = (await next()) as { upstream: string };
  const key = `bench-${randomUUID()}-${randomUUID()}`;
  const dir = mkdtempSync(join(tmpdir(), 'aigw-bench-mcp-cpu-'));
  const statePath = join(dir, 'state.yaml');
  writeFileSync(statePath, dump({ apiKeys: [{ id: 'bench', key }], egress: { allow: ['127.0.0.0/8'], clientAllow: [] }, mcpServers: [{ name: 'bench', url: upstream }] }));
  const { startGateway } = await import('../proxy/start-gateway.ts');
  const gateway = await startGateway({ sources: { statePath }, env: {}, logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
  try {
    child.send({ url: `${gateway.origin}/mcp/bench`, headers: { 'x-gateway-api-key': key }, calls, warmup } satisfies GatewayMessage);
    await next();
    const processAtStart = process.cpuUsage();
    const threadAtStart = process.threadCpuUsage();
    child.send({ go: true } satisfies GatewayMessage);
    const { times } = (await next()) as { times: number[] };
    const used = process.cpuUsage(processAtStart);
    const thread = process.threadCpuUsage(threadAtStart);
    times.sort((a, b) => a - b);
    const perCall = (us: number): string => (us / 1000 / calls).toFixed(3);
    return [
      `tools/call through /mcp/{server}, the gateway in its own process: ${calls} calls after ${warmup} warm-up calls, node ${process.version}`,
      '',
      '| gateway CPU per call (ms) | user | system | main thread | client p50 (ms) |',
      '|---|---|---|---|---|',
      `| ${perCall(used.user + used.system)} | ${perCall(used.user)} | ${perCall(used.system)} | ${perCall(thread.user + thread.system)} | ${(times[Math.floor(times.length / 2)] ?? Number.NaN).toFixed(3)} |`,
      '',
    ].join('\n');
  } finally {
    child.send({ exit: true } satisfies GatewayMessage);
    await gateway.close({ timeoutMs: 1000 });
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '4000' }, warmup: { type: 'string', default: '1500' }, peer: { type: 'boolean', default: false } } });
  if (values.peer) await peer();
  else process.stdout.write(await gatewaySide(Number(values.calls), Number(values.warmup)));
}
