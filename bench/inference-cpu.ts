// `npx node bench/inference-cpu.ts [--tree .] [--requests 20000] [--rounds 3] [--alloc]
//   [--connections 16] [--collect none|last-resort|regular] [--idle-ms 0]`: the
// gateway's main-thread CPU per harness request (POST /v1/chat/completions, the saved
// fallback config with retry 2, bench/aigateway-state.yaml), with the mock upstream and the
// load generator in a child process, so this process holds only the gateway. `--alloc`
// samples allocations (V8's sampling heap profiler, collected objects included) and prints
// the bytes allocated per request by each file of the tree's proxy/. `--tree` loads the
// gateway of another checkout (an A/B of two trees: alternate runs of each). Instructions per
// request, which a loaded machine does not move: run it under
//   valgrind --tool=callgrind --instr-atstart=no node bench/inference-cpu.ts --callgrind …
// (instrumentation is switched on for the measured rounds only; Ir / requests is the count).
// `--collect` runs one forced full collection (V8's gc(), the idle release's `last-resort`
// flavour or a `regular` one) and glibc's malloc_trim between the warm-up and the measured
// rounds: what the requests after an idle release cost (`--connections 1`: lone requests, as
// in the harness's open loop). `--idle-ms` idles that long first (V8's own memory reducer may
// collect meanwhile), as the harness's gateway idles between its runs.
import { execFileSync, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { harnessChatBody } from './harness-body.ts';

type PeerMessage = { upstream: string } | { done: number };
type GatewayMessage = { url: string; headers: Record<string, string>; requests: number; connections: number } | { exit: true };
type Collection = 'none' | 'last-resort' | 'regular';

const BODY = harnessChatBody(false);

/** The child: the mock upstream, and a closed loop of exactly `requests` requests on demand. */
async function peer(): Promise<void> {
  const { startMockUpstream, DEFAULT_MOCK_OPTIONS } = await import('./mock-upstream.ts');
  const server = await startMockUpstream(0, DEFAULT_MOCK_OPTIONS);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  let pool: Pool | undefined;
  process.on('message', (message: GatewayMessage) => {
    void (async () => {
      if ('exit' in message) {
        await pool?.close();
        server.close();
        process.disconnect();
        return;
      }
      pool ??= new Pool(new URL(message.url).origin, { connections: message.connections });
      let left = message.requests;
      let failed = 0;
      const worker = async (): Promise<void> => {
        while (left > 0) {
          left--;
          const answer = await pool?.request({ path: '/v1/chat/completions', method: 'POST', headers: message.headers, body: BODY });
          if (answer?.statusCode !== 200) failed++;
          await answer?.body.dump();
        }
      };
      await Promise.all(Array.from({ length: message.connections }, worker));
      process.send?.({ done: failed } satisfies PeerMessage);
    })();
  });
  process.send?.({ upstream: `http://127.0.0.1:${port}` } satisfies PeerMessage);
}

interface AllocationSample {
  head: { callFrame: { url: string; functionName: string }; children: unknown[]; selfSize: number };
}

type SampleNode = { callFrame: { url: string; functionName: string; lineNumber: number }; children: unknown[]; selfSize: number };

/**
 * Bytes allocated by each proxy/ file (the innermost proxy/ frame of each sample's stack),
 * and by each proxy/ function with the frame that allocated (itself, or what it called).
 */
function allocations(profile: AllocationSample, tree: string): { byFile: Map<string, number>; byFunction: Map<string, number> } {
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const root = `file://${tree}/proxy/`;
  const add = (map: Map<string, number>, key: string, bytes: number): void => void map.set(key, (map.get(key) ?? 0) + bytes);
  const visit = (node: SampleNode, owner: string, ownerFunction: string): void => {
    const { url, functionName, lineNumber } = node.callFrame;
    const inProxy = url.startsWith(root);
    const file = inProxy ? url.slice(root.length - 'proxy/'.length) : owner;
    const where = inProxy ? `${file}:${lineNumber + 1} ${functionName || '(anonymous)'}` : ownerFunction;
    if (node.selfSize > 0) {
      add(byFile, file, node.selfSize);
      add(byFunction, inProxy ? where : `${where} → ${functionName || '(anonymous)'}`, node.selfSize);
    }
    for (const child of node.children as SampleNode[]) visit(child, file, where);
  };
  visit(profile.head as SampleNode, '(outside proxy/)', '(outside proxy/)');
  return { byFile, byFunction };
}

/** One forced full collection of this isolate, then malloc_trim (the idle release's own code). */
async function collectOnce(tree: string, flavor: Exclude<Collection, 'none'>): Promise<void> {
  const { releaseIsolateMemory } = (await import(join(tree, 'proxy/memory-release.ts'))) as typeof import('../proxy/memory-release.ts');
  const before = process.memoryUsage.rss();
  releaseIsolateMemory(flavor);
  process.stdout.write(`${flavor} collection: RSS ${(before / 2 ** 20).toFixed(1)} → ${(process.memoryUsage.rss() / 2 ** 20).toFixed(1)} MiB\n`);
}

async function gatewaySide(tree: string, requests: number, rounds: number, alloc: boolean, callgrind: boolean, connections: number, collect: Collection, idleMs: number): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['--peer'], { stdio: 'inherit', execArgv: [] });
  const next = (): Promise<PeerMessage> => new Promise((done) => child.once('message', (message) => done(message as PeerMessage)));
  const { upstream } = (await next()) as { upstream: string };
  const key = `bench-${randomUUID()}`;
  const { startGateway } = (await import(join(tree, 'proxy/start-gateway.ts'))) as typeof import('../proxy/start-gateway.ts');
  const { pino } = await import('pino');
  const gateway = await startGateway({
    sources: { statePath: join(tree, 'bench/aigateway-state.yaml') },
    env: { BENCH_MOCK_URL: `${upstream}/v1`, BENCH_GATEWAY_KEY: key },
    logger: pino({ level: 'silent' }),
    port: 0,
    host: '127.0.0.1',
  });
  const headers = { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-config': 'bench-fallback' };
  const batch = async (count: number): Promise<void> => {
    child.send({ url: gateway.origin, headers, requests: count, connections } satisfies GatewayMessage);
    const { done: failed } = (await next()) as { done: number };
    if (failed > 0) throw new Error(`${failed} requests failed`);
  };
  try {
    await batch(Math.min(requests, 5_000)); // warm-up
    if (idleMs > 0) await new Promise((resolve) => setTimeout(resolve, idleMs));
    if (collect !== 'none') await collectOnce(tree, collect);
    else process.stdout.write(`no collection: RSS ${(process.memoryUsage.rss() / 2 ** 20).toFixed(1)} MiB\n`);
    const perRound: number[] = [];
    if (callgrind) execFileSync('callgrind_control', ['-i', 'on', String(process.pid)], { stdio: 'ignore' });
    for (let round = 0; round < rounds; round++) {
      const start = process.threadCpuUsage();
      await batch(requests);
      const used = process.threadCpuUsage(start);
      perRound.push((used.user + used.system) / requests);
    }
    if (callgrind) execFileSync('callgrind_control', ['-i', 'off', String(process.pid)], { stdio: 'ignore' });
    process.stdout.write(`${tree}: main thread µs/request by round: ${perRound.map((value) => value.toFixed(1)).join(' ')}\n`);
    if (alloc) {
      const session = new Session();
      session.connect();
      await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      await batch(requests);
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: AllocationSample };
      session.disconnect();
      const { byFile, byFunction } = allocations(profile, tree);
      const rows = [...byFile].sort((a, b) => b[1] - a[1]);
      const total = rows.reduce((sum, [, bytes]) => sum + bytes, 0);
      process.stdout.write(`allocated per request (sampled): ${(total / requests).toFixed(0)} B\n`);
      for (const [file, bytes] of rows.slice(0, 25)) process.stdout.write(`  ${(bytes / requests).toFixed(0).padStart(6)} B  ${file}\n`);
      process.stdout.write('by function (→ the frame outside proxy/ that allocated):\n');
      for (const [where, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env['ALLOC_TOP'] ?? 40))) {
        process.stdout.write(`  ${(bytes / requests).toFixed(0).padStart(6)} B  ${where}\n`);
      }
    }
  } finally {
    child.send({ exit: true } satisfies GatewayMessage);
    await gateway.close({ timeoutMs: 1000 });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      tree: { type: 'string', default: '.' },
      requests: { type: 'string', default: '20000' },
      rounds: { type: 'string', default: '3' },
      alloc: { type: 'boolean', default: false },
      callgrind: { type: 'boolean', default: false },
      peer: { type: 'boolean', default: false },
      connections: { type: 'string', default: '16' },
      collect: { type: 'string', default: 'none' },
      'idle-ms': { type: 'string', default: '0' },
    },
  });
  const collect = values.collect as Collection;
  if (!['none', 'last-resort', 'regular'].includes(collect)) throw new Error('--collect: none, last-resort or regular');
  // 0 or NaN connections would send nothing and report a measurement of nothing.
  if (!(Number.isInteger(Number(values.connections)) && Number(values.connections) >= 1)) throw new Error('--connections: a positive integer');
  if (values.peer) await peer();
  else await gatewaySide(resolve(values.tree), Number(values.requests), Number(values.rounds), values.alloc, values.callgrind, Number(values.connections), collect, Number(values['idle-ms']));
}
