import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RequestRecord } from '../proxy/observability/request-record.ts';
import type { RequestLogStore } from '../proxy/logs/request-log-store.ts';

// CPU per record of the SQLite request log store (issue 32): N harness-like records through
// the writer's sink into SqliteLogStore on a scratch file, as the gateway feeds it (1,000
// records a turn of the event loop), then flush. Reads each thread's run time from
// /proc/self/task/<tid>/schedstat (ns): the main thread, the store's WorkerThread, and the
// rest (V8 helpers). Also the wall time of each insertMany (≈ the worker's busy stretch per
// batch) and that every record was written. Linux only.
//
//   node bench/log-store-cpu.ts [--records 20000] [--warmup 20000] [--root <tree>]   one run, one JSON line
//   node bench/log-store-cpu.ts --ab <treeA>,<treeB> [--rounds 5]          alternating runs, medians
//   … --ordered-ids: record ids time-first (UUIDv7-like) instead of random v4
//
//   taskset -c 1 node bench/log-store-cpu.ts --load 480 --seconds 20 --nice 5 [--rate 500]
//     the store beside a busy serving thread on one core: each record costs the main thread
//     480 µs of spinning (a request), as fast as it goes (closed loop) or at --rate/s (open
//     loop, lateness = start − scheduled). Says how long the main thread waited for the core
//     (schedstat run delay), whether every record was stored, and the worker's share.
//
// A tree is a checkout (or `git archive` of proxy/ with package.json and node_modules linked).

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
};

interface Result {
  root: string;
  records: number;
  mainUs: number;
  /** Of mainUs, inside insertMany's synchronous part (the hand-off). */
  handoffUs: number;
  workerUs: number;
  otherUs: number;
  totalUs: number;
  batches: number;
  batchMsP50: number;
  batchMsP99: number;
  batchMsMax: number;
  stored: number;
  dropped: number;
}

function threadNs(): { main: number; worker: number; other: number } {
  let main = 0;
  let worker = 0;
  let other = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    let ns: number;
    let comm: string;
    try {
      ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      comm = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // the thread ended meanwhile
    }
    if (Number(tid) === process.pid) main += ns;
    else if (comm === 'WorkerThread') worker += ns;
    else other += ns;
  }
  return { main, worker, other };
}

let sequence = 0;
/** A record as the harness's fallback config makes it: one attempt, usage, cost, no metadata. */
const orderedIds = args.includes('--ordered-ids');
/** A UUIDv7-like id (time first) with --ordered-ids: the primary key index is then appended to. */
function recordId(startedAt: number): string {
  const random = randomUUID();
  if (!orderedIds) return random;
  const ms = startedAt.toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${random.slice(15)}`;
}

function harnessRecord(): RequestRecord {
  sequence++;
  return {
    id: recordId(1_790_000_000_000 + sequence),
    traceId: randomUUID().replaceAll('-', ''),
    startedAt: 1_790_000_000_000 + sequence,
    method: 'POST',
    route: '/v1/chat/completions',
    status: 200,
    latencyMs: 1.234567 + (sequence % 100) / 7,
    ttftMs: 0.987654 + (sequence % 50) / 11,
    apiKeyId: 'k_01HBENCHKEY0000000000000',
    workspace: 'default',
    configId: 'bench-fallback',
    targetPath: 'config.targets[0]',
    provider: 'openai',
    model: 'gpt-4o-mini',
    modelRequested: 'gpt-4o-mini',
    attempts: [{ target: 'config.targets[0]', provider: 'openai', model: 'gpt-4o-mini', status: 200, durationMs: 0.8123 + (sequence % 9) / 13, errorCode: undefined }],
    metadata: sequence % 4 === 0 ? { user: `u${sequence % 10}`, env: 'prod' } : undefined,
    promptTokens: 12,
    completionTokens: 9,
    totalTokens: 21,
    cachedTokens: undefined,
    reasoningTokens: undefined,
    usageEstimated: undefined,
    costUsd: 0.0000072,
    otelTraceId: undefined,
    cacheStatus: undefined,
    retries: 0,
    guardrailVerdict: undefined,
    errorCode: undefined,
  };
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

async function runOnce(root: string, records: number): Promise<Result> {
  const from = (path: string): string => pathToFileURL(join(root, path)).href;
  const { SqliteLogStore } = (await import(from('proxy/logs/sqlite-log-store.ts'))) as typeof import('../proxy/logs/sqlite-log-store.ts');
  const { createRequestLogWriter } = (await import(from('proxy/logs/request-log-writer.ts'))) as typeof import('../proxy/logs/request-log-writer.ts');
  const dir = mkdtempSync(join(tmpdir(), 'aigw-log-cpu-'));
  const nice = arg('--nice');
  const store = await SqliteLogStore.open({ path: join(dir, 'request-logs.sqlite'), ...(nice === undefined ? {} : { threadNice: Number(nice) }) });
  const batchMs: number[] = [];
  let timing = false;
  // The writer sees the store through this wrapper, which times each batch.
  const timed: RequestLogStore = Object.create(store) as RequestLogStore;
  let handoffUs = 0;
  timed.insertMany = async (batch) => {
    const started = performance.now();
    // The synchronous part of the call: encoding the batch and posting it.
    const cpu = process.threadCpuUsage();
    const written = store.insertMany(batch);
    const spent = process.threadCpuUsage(cpu);
    if (timing) handoffUs += spent.user + spent.system;
    await written;
    if (timing) batchMs.push(performance.now() - started);
  };
  const writer = createRequestLogWriter(timed);
  // Records are made before the timed part: building them is the gateway's cost, not the store's.
  const feed = async (all: RequestRecord[]): Promise<void> => {
    for (let at = 0; at < all.length; at += 1000) {
      for (const record of all.slice(at, at + 1000)) writer.sink(record);
      await new Promise((resolve) => setImmediate(resolve));
      // Like a gateway under load: the queue never nears its cap (10,000).
      while (writer.stats().queued > 4000) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await writer.flush();
  };
  // Warm-up: the JIT's tiers (optimizing compiles run on V8's helper threads), the table's first pages.
  const warmup = Number(arg('--warmup') ?? 20_000);
  await feed(Array.from({ length: warmup }, harnessRecord));
  const timedRecords = Array.from({ length: records }, harnessRecord);
  const before = threadNs();
  timing = true;
  await feed(timedRecords);
  timing = false;
  const after = threadNs();
  const stats = writer.stats();
  const stored = (await store.summary({}, undefined)).total.requests;
  await writer.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  batchMs.sort((a, b) => a - b);
  const us = (ns: number): number => Math.round(ns / records / 10) / 100;
  return {
    root,
    records,
    mainUs: us(after.main - before.main),
    handoffUs: Math.round((handoffUs / records) * 100) / 100,
    workerUs: us(after.worker - before.worker),
    otherUs: us(after.other - before.other),
    totalUs: us(after.main - before.main + after.worker - before.worker + after.other - before.other),
    batches: batchMs.length,
    batchMsP50: Math.round(percentile(batchMs, 50) * 100) / 100,
    batchMsP99: Math.round(percentile(batchMs, 99) * 100) / 100,
    batchMsMax: Math.round((batchMs.at(-1) ?? Number.NaN) * 100) / 100,
    stored: stored - warmup,
    dropped: stats.dropped.queueFull + stats.dropped.writeFailed + stats.dropped.closed,
  };
}

interface LoadResult {
  nice: number;
  mode: string;
  records: number;
  perSecond: number;
  mainWaitUsPerRecord: number;
  latenessMsP50: number;
  latenessMsP99: number;
  latenessMsMax: number;
  workerShare: number;
  stored: number;
  dropped: number;
}

const runDelayNs = (): number => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]);

async function runLoad(root: string, spinUs: number, seconds: number, nice: number, rate: number | undefined): Promise<LoadResult> {
  const from = (path: string): string => pathToFileURL(join(root, path)).href;
  const { SqliteLogStore } = (await import(from('proxy/logs/sqlite-log-store.ts'))) as typeof import('../proxy/logs/sqlite-log-store.ts');
  const { createRequestLogWriter } = (await import(from('proxy/logs/request-log-writer.ts'))) as typeof import('../proxy/logs/request-log-writer.ts');
  const dir = mkdtempSync(join(tmpdir(), 'aigw-log-load-'));
  const store = await SqliteLogStore.open({ path: join(dir, 'request-logs.sqlite'), threadNice: nice });
  const writer = createRequestLogWriter(store);
  const spin = (): void => {
    const end = performance.now() + spinUs / 1000;
    while (performance.now() < end);
  };
  const lateness: number[] = [];
  const started = performance.now();
  const before = threadNs();
  const waitBefore = runDelayNs();
  let sent = 0;
  while (performance.now() - started < seconds * 1000) {
    if (rate !== undefined) {
      const due = started + (sent * 1000) / rate;
      const now = performance.now();
      if (now < due) await new Promise((resolve) => setTimeout(resolve, due - now));
      lateness.push(performance.now() - due);
    }
    spin();
    writer.sink(harnessRecord());
    sent++;
    if (rate === undefined) await new Promise((resolve) => setImmediate(resolve));
  }
  const elapsed = performance.now() - started;
  const waited = runDelayNs() - waitBefore;
  const after = threadNs();
  await writer.flush();
  const stats = writer.stats();
  const stored = (await store.summary({}, undefined)).total.requests;
  await writer.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  lateness.sort((a, b) => a - b);
  const ms = (value: number): number => Math.round(value * 100) / 100;
  return {
    nice,
    mode: rate === undefined ? 'closed' : `open ${rate}/s`,
    records: sent,
    perSecond: Math.round((sent * 1000) / elapsed),
    mainWaitUsPerRecord: Math.round(waited / sent / 10) / 100,
    latenessMsP50: ms(percentile(lateness, 50)),
    latenessMsP99: ms(percentile(lateness, 99)),
    latenessMsMax: ms(lateness.at(-1) ?? Number.NaN),
    workerShare: Math.round(((after.worker - before.worker) / (elapsed * 1e6)) * 1000) / 1000,
    stored,
    dropped: stats.dropped.queueFull + stats.dropped.writeFailed + stats.dropped.closed,
  };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const records = Number(arg('--records') ?? 20_000);
const ab = arg('--ab');
const load = arg('--load');
if (load !== undefined) {
  const rate = arg('--rate');
  const root = resolve(arg('--root') ?? join(import.meta.dirname, '..'));
  console.log(JSON.stringify(await runLoad(root, Number(load), Number(arg('--seconds') ?? 20), Number(arg('--nice') ?? 5), rate === undefined ? undefined : Number(rate))));
} else if (ab === undefined) {
  console.log(JSON.stringify(await runOnce(resolve(arg('--root') ?? join(import.meta.dirname, '..')), records)));
} else {
  const roots = ab.split(',').map((root) => resolve(root));
  const rounds = Number(arg('--rounds') ?? 5);
  const results = new Map<string, Result[]>(roots.map((root) => [root, []]));
  for (let round = 0; round < rounds; round++) {
    // ABBA: each tree goes first as often as the other.
    const order = round % 2 === 0 ? roots : [...roots].reverse();
    for (const root of order) {
      const line = execFileSync(process.execPath, [import.meta.filename, '--root', root, '--records', String(records), '--warmup', arg('--warmup') ?? '20000', ...(orderedIds ? ['--ordered-ids'] : [])], { encoding: 'utf8' });
      const result = JSON.parse(line.trim().split('\n').at(-1) ?? '{}') as Result;
      results.get(root)?.push(result);
      console.error(JSON.stringify(result));
    }
  }
  for (const [root, list] of results) {
    const m = (key: keyof Result): number => median(list.map((result) => result[key] as number));
    console.log(
      `${root}: µs/record main ${m('mainUs')} (hand-off ${m('handoffUs')}) worker ${m('workerUs')} other ${m('otherUs')} total ${m('totalUs')}; ` +
        `batch ms p50 ${m('batchMsP50')} p99 ${m('batchMsP99')} max ${m('batchMsMax')}; ` +
        `stored ${list.map((result) => result.stored).join('/')} of ${records}, dropped ${list.reduce((sum, result) => sum + result.dropped, 0)} (medians of ${list.length})`,
    );
  }
}
