import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

// CPU time and bytes allocated by one request's accounting at the end (finishRequest: the
// cost, the metrics, the record, the log line, the store's hand-off), outside any server,
// on the harness's shape: an authenticated chat completion through the fallback config,
// one attempt, usage reported, the log line going through the real logger to /dev/null.
// Contexts are built before each measured window, so only the accounting is counted.
//
//   npx node --expose-gc bench/finish-request-cost.ts [--against <another checkout>] [--rounds 12]
//
// --against loads proxy/ from another tree too (its node_modules linked to this one's) and
// alternates the two, window by window, in this one process (a shared machine's noise then
// falls on both alike). CPU windows run with the collector as usual (its work is part of the
// cost); byte windows are short and count only when no GC ran in them.

const { values } = parseArgs({
  options: {
    against: { type: 'string' },
    rounds: { type: 'string', default: '12' },
    calls: { type: 'string', default: '20000' },
  },
});
const here = fileURLToPath(new URL('..', import.meta.url));
const roots = values.against === undefined ? [here] : [here, resolve(values.against)];

type Finish = typeof import('../proxy/observability/request-finish.ts');
type Metrics = typeof import('../proxy/observability/gateway-metrics.ts');
type LogLine = typeof import('../proxy/observability/log-line.ts');
type Context = typeof import('../proxy/request-context.ts');
type Loader = typeof import('../proxy/config/state-loader.ts');
type Guardrails = typeof import('../proxy/guardrails/builtin-guardrail-compiler.ts');

const stateText = readFileSync(new URL('aigateway-state.yaml', import.meta.url), 'utf8');
const env = { BENCH_MOCK_URL: 'http://127.0.0.1:9/v1', BENCH_GATEWAY_KEY: 'gw-bench-key-0123456789-0123456789' };
const reply = { raw: { writableFinished: true, headersSent: true }, statusCode: 200 };

interface Tree {
  readonly root: string;
  readonly finish: (request: unknown) => void;
  readonly requestOf: () => unknown;
}

async function treeAt(root: string): Promise<Tree> {
  const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(root, path)).href)) as T;
  const { finishRequest } = await load<Finish>('proxy/observability/request-finish.ts');
  const { createGatewayMetrics } = await load<Metrics>('proxy/observability/gateway-metrics.ts');
  const { createGatewayLogger } = await load<LogLine>('proxy/observability/log-line.ts');
  const { newRequestContext } = await load<Context>('proxy/request-context.ts');
  const { loadStateFromTexts } = await load<Loader>('proxy/config/state-loader.ts');
  const { BUILTIN_GUARDRAIL_COMPILER } = await load<Guardrails>('proxy/guardrails/builtin-guardrail-compiler.ts');
  const loaded = loadStateFromTexts({ state: stateText }, env, BUILTIN_GUARDRAIL_COMPILER);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded));
  const state = loaded.state;
  const apiKey = [...state.apiKeysByDigest.values()][0];
  const logger = createGatewayLogger({ destination: '/dev/null' });
  const metrics = createGatewayMetrics({ defaultMetrics: false });
  // The store's writer queues records and hands them over in batches (proxy/logs/): here a queue.
  const queue: unknown[] = [];
  const sink = (record: unknown): void => {
    queue.push(record);
    if (queue.length >= 200) queue.length = 0;
  };
  const deps = { logger, metrics, requestSink: sink as never, tracer: undefined };
  return {
    root,
    finish: (request) => finishRequest(request as never, reply as never, deps),
    requestOf() {
      // A trace id as the gateway makes one when the client sends none.
      const context = newRequestContext(randomUUID(), state);
      context.apiKey = apiKey;
      context.configId = 'bench-fallback';
      context.provider = 'openai';
      context.model = 'gpt-4o-mini';
      context.modelRequested = 'gpt-4o-mini';
      context.responseModel = 'gpt-4o-mini-2024-07-18';
      context.targetPath = 'config.targets[0]';
      context.attempts = [{ target: 'config.targets[0]', provider: 'openai', model: 'gpt-4o-mini', status: 200, durationMs: 0.412, errorCode: undefined }];
      context.usage = { prompt: 19, completion: 10, total: 29 };
      context.upstreamStartedAt = context.startedAt + 150_000n;
      context.upstreamDoneAt = context.startedAt + 450_000n;
      return { gateway: context, method: 'POST', routeOptions: { url: '/v1/chat/completions' } };
    },
  };
}

const trees = await Promise.all(roots.map(treeAt));
const rounds = Number(values.rounds);
const calls = Number(values.calls);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');
let gcs = 0;
const { PerformanceObserver } = await import('node:perf_hooks');
new PerformanceObserver((list) => (gcs += list.getEntries().length)).observe({ entryTypes: ['gc'] });
const settle = (): Promise<void> => new Promise((done) => setImmediate(done)); // sonic-boom's writes, the gc observer

/** CPU ns a call, over `count` calls in chunks of 1,000 (the event loop turns between them, as in a server). */
async function cpuWindow(tree: Tree, count: number): Promise<number> {
  let cpuUs = 0;
  for (let done = 0; done < count; done += 1000) {
    const requests = Array.from({ length: 1000 }, () => tree.requestOf());
    const before = process.cpuUsage();
    for (const request of requests) tree.finish(request);
    const cpu = process.cpuUsage(before);
    cpuUs += cpu.user + cpu.system;
    await settle();
  }
  return (cpuUs * 1000) / count;
}

const BYTE_CALLS = 200;
const pause = (): Promise<void> => new Promise((done) => setTimeout(done, 5));

/** Heap bytes a call over BYTE_CALLS calls, or undefined when a GC ran in the window. */
async function byteWindow(tree: Tree): Promise<number | undefined> {
  const requests = Array.from({ length: BYTE_CALLS }, () => tree.requestOf());
  gc!();
  await pause(); // the forced GC's entry reaches the observer
  const gcsBefore = gcs;
  const heapBefore = process.memoryUsage().heapUsed;
  for (const request of requests) tree.finish(request);
  const bytes = process.memoryUsage().heapUsed - heapBefore;
  await pause();
  return gcs === gcsBefore ? bytes / BYTE_CALLS : undefined;
}

for (const tree of trees) await cpuWindow(tree, 20_000); // warm-up: compiles, fills the caches
const cpu = trees.map(() => [] as number[]);
const bytes = trees.map(() => [] as number[]);
for (let round = 0; round < rounds; round++) {
  for (const [index, tree] of trees.entries()) {
    cpu[index]!.push(await cpuWindow(tree, calls));
    const counted = await byteWindow(tree);
    if (counted !== undefined) bytes[index]!.push(counted);
  }
}
const median = (numbers: number[]): number => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] ?? NaN;
for (const [index, tree] of trees.entries()) {
  console.log(JSON.stringify({
    root: tree.root,
    cpuNsPerCall: { median: Math.round(median(cpu[index]!)), min: Math.round(Math.min(...cpu[index]!)) },
    bytesPerCall: Math.round(median(bytes[index]!)),
    byteWindowsWithoutGc: bytes[index]!.length,
  }));
}
