import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { summariseProfileFile } from './cpu-profile-summary.ts';
import { createLoadPool, REQUEST_TIMEOUT_MS, runClosedLoop, runOpenLoop, type RequestSpec, type SegmentResult } from './load-generator.ts';
import { COMPLETION_BODY } from './mock-upstream.ts';
import { coreBusySeconds, cpuSeconds, procAvailable, rssMiB, waitUntilIdle } from './process-stats.ts';
import { renderReport, type Scenario, type ScenarioResult, type TargetTotals } from './report.ts';
import { runWrkClosedLoop, wrkPath } from './wrk-closed-loop.ts';
import { harnessChatBody } from './harness-body.ts';
import {
  BENCH_DIR,
  directTarget,
  ensurePeer,
  launchPrefix,
  REPO_ROOT,
  ROUTING_CONFIG_IDS,
  startAigateway,
  startBare,
  startMock,
  startPeer,
  tasksetAvailable,
  TARGET_LABELS,
  type MockSettings,
  type RoutingMode,
  type Target,
  type TargetName,
} from './targets.ts';

// `npm run bench [-- --quick] [--routing single|fallback] [--targets a,b] [--profile]`
// Measures direct / bare proxy / aigateway / peer in one run, interleaved round by round,
// and writes the markdown report to bench/results/ (and stdout). Progress goes to stderr.

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    routing: { type: 'string', default: 'fallback' },
    targets: { type: 'string', default: 'direct,bare,aigateway,peer' },
    profile: { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    'keep-logs': { type: 'boolean', default: false },
    features: { type: 'string', default: 'mcp,budgets,console' },
    'node-generator': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (options.help) {
  process.stdout.write(`Usage: npm run bench -- [--quick] [--routing single|fallback] [--targets direct,bare,aigateway,peer]
                        [--profile] [--no-pin] [--keep-logs] [--features mcp,budgets,console|none]
                        [--node-generator]
  --quick     one short round per scenario (~35 s) instead of three (~3 min)
  --routing   aigateway's saved config: single target (default) or fallback + retry
  --profile   profile aigateway (node --cpu-prof) under the closed loop and summarise it
              (with --targets bare: profile the bare proxy instead, for comparison)
  --features  the per-feature sections after the main tables (default all): MCP tools/call
              through the gateway vs direct, a request under an active cost policy vs none,
              load with the console polling beside it; none to skip them
  --node-generator  the closed loop on the bench's own Node generator even when wrk is
              installed (wrk is what ../shared/tools/bench-side-by-side uses)
`);
  process.exit(0);
}

const TARGET_CORE = 0;
const GENERATOR_CORE = 1;
// Once re-run under taskset this process sees one core, so the relaunched run is told by env.
const relaunched = process.env['BENCH_RELAUNCHED'] === 'pinned';
const pin = relaunched || (!options['no-pin'] && tasksetAvailable() && cpus().length >= 2);

// The generator (this process) and the mock share core 1: re-run ourselves pinned there.
if (!relaunched && pin) {
  const [command = 'taskset', ...args] = [...launchPrefix(GENERATOR_CORE), process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  const child = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, BENCH_RELAUNCHED: 'pinned' } });
  process.exit(child.status ?? 1);
}

if (!procAvailable()) throw new Error('bench needs /proc (Linux) to read CPU time and RSS');

const quick = options.quick;
const routing: RoutingMode = options.routing === 'fallback' ? 'fallback' : 'single';
if (options.routing !== 'single' && options.routing !== 'fallback') throw new Error(`--routing must be single or fallback, got ${options.routing}`);
const wanted = new Set(options.targets.split(',').map((name) => name.trim()));
const plan = {
  rounds: quick ? 1 : 3,
  segmentMs: quick ? 1_250 : 3_000,
  warmupMs: quick ? 500 : 1_500,
  profileMs: quick ? 6_000 : 15_000,
  pauseMs: 150,
};
// As the shared yardstick's mock streams: 20 chunks 5 ms apart.
const mockSettings: MockSettings = { delayMs: 0, chunks: 20, chunkIntervalMs: 5 };
const SCENARIOS: Scenario[] = [
  { id: 'open-500', title: 'Open loop, 500 req/s', kind: 'open', rate: 500, connections: 0 },
  { id: 'open-1500', title: 'Open loop, 1,500 req/s', kind: 'open', rate: 1_500, connections: 0 },
  { id: 'closed', title: 'Closed loop, 50 connections (max throughput)', kind: 'closed', rate: 0, connections: 50 },
  { id: 'stream', title: `Streaming, 200 streams/s (${mockSettings.chunks} chunks ${mockSettings.chunkIntervalMs} ms apart)`, kind: 'stream', rate: 200, connections: 0 },
];

const PLAIN_BODY = harnessChatBody(false);
const STREAM_BODY = harnessChatBody(true);
const specFor = (target: Target, stream: boolean): RequestSpec => ({ path: '/v1/chat/completions', headers: target.headers, body: stream ? STREAM_BODY : PLAIN_BODY });

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
const resultsDir = join(BENCH_DIR, 'results');
mkdirSync(resultsDir, { recursive: true });
const workDir = mkdtempSync(join(tmpdir(), 'aigateway-bench-'));
const targetCore = pin ? TARGET_CORE : undefined;
const generatorCore = pin ? GENERATOR_CORE : undefined;
const notes: string[] = [];
// Ctrl-C: children are killed by targets.ts's exit hook; the scratch folder goes too.
process.once('SIGINT', () => {
  rmSync(workDir, { recursive: true, force: true });
  process.exit(130);
});

/** One request, read whole; for probes that need the status and the error text. */
async function probe(target: Target, stream: boolean): Promise<{ status: number; text: string }> {
  const answer = await request(`${target.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: target.headers,
    body: stream ? STREAM_BODY : PLAIN_BODY,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: answer.statusCode, text: await answer.body.text() };
}

/** Checks a target answers 200 (and, for aigateway, whether the routing engine is there). */
async function admit(target: Target): Promise<boolean> {
  let answer = await probe(target, false).catch((error: unknown) => ({ status: 0, text: String(error) }));
  if (target.name === 'aigateway' && routing === 'fallback' && answer.status === 400) {
    reportNote(
      `aigateway answered 400 to the fallback + retry config (${answer.text.slice(0, 160)}): the routing engine is not available yet, so aigateway is measured with the single-target config "${ROUTING_CONFIG_IDS.single}".`,
    );
    target.headers['x-gateway-config'] = ROUTING_CONFIG_IDS.single;
    answer = await probe(target, false).catch((error: unknown) => ({ status: 0, text: String(error) }));
  }
  const streamed = answer.status === 200 ? await probe(target, true).catch((error: unknown) => ({ status: 0, text: String(error) })) : answer;
  if (answer.status === 200 && streamed.status === 200 && streamed.text.includes('[DONE]')) return true;
  const bad = answer.status === 200 ? streamed : answer;
  reportNote(`${TARGET_LABELS[target.name]} left out: a probe request got ${bad.status} ${bad.text.slice(0, 200)}`);
  return false;
}

/** A problem worth a line in the report as well as on stderr. */
function reportNote(message: string): void {
  log(`!! ${message}`);
  notes.push(message);
}

/** Starts one target; a target that cannot start is left out of the run with a note. */
async function tryStart(name: TargetName, start: () => Promise<Target>): Promise<Target | undefined> {
  try {
    return await start();
  } catch (error) {
    reportNote(`${TARGET_LABELS[name]} left out: it did not start (${(error as Error).message.split('\n')[0]})`);
    return undefined;
  }
}

async function startTargets(mock: { origin: string; process: Target['process'] }): Promise<Target[]> {
  const started: (Target | undefined)[] = [];
  if (wanted.has('direct')) started.push(directTarget(mock));
  if (wanted.has('bare')) started.push(await tryStart('bare', () => startBare(workDir, targetCore, mock.origin)));
  if (wanted.has('aigateway')) {
    started.push(await tryStart('aigateway', () => startAigateway({ core: targetCore, workDir, mockOrigin: mock.origin, routing })));
  }
  if (wanted.has('peer')) {
    const peer = await ensurePeer(log);
    if (peer.ok) started.push(await tryStart('peer', () => startPeer(workDir, targetCore, peer.startScript, mock.origin)));
    else reportNote(`peer (@portkey-ai/gateway) is missing from this run: ${peer.reason}`);
  }
  const admitted: Target[] = [];
  for (const target of started) {
    if (target === undefined) continue;
    if (await admit(target)) admitted.push(target);
    else if (target.name !== 'direct') await target.process.stop();
  }
  // The report is still written, but a run without aigateway is not a success.
  if (wanted.has('aigateway') && !admitted.some((target) => target.name === 'aigateway')) process.exitCode = 1;
  return admitted;
}

async function warmUp(target: Target, pool: ReturnType<typeof createLoadPool>): Promise<void> {
  await runClosedLoop(pool, specFor(target, false), { connections: 16, durationMs: plan.warmupMs });
  await runOpenLoop(pool, specFor(target, true), { rate: 100, durationMs: 300, drainMs: REQUEST_TIMEOUT_MS });
}

// The closed loop runs on wrk when it is installed, like the shared yardstick (wrk-closed-loop.ts).
const wrk = options['node-generator'] ? undefined : wrkPath();
if (wrk === undefined && !options['node-generator']) notes.push('wrk is not installed: the closed loop ran on the Node generator, which cannot saturate a fast target (see docs/performance.md, "Two benches, one answer").');

function closedLoop(target: Target, pool: ReturnType<typeof createLoadPool>, connections: number, durationMs: number): Promise<SegmentResult> {
  if (wrk === undefined) return runClosedLoop(pool, specFor(target, false), { connections, durationMs });
  return runWrkClosedLoop(wrk, target.origin, specFor(target, false), { connections, durationMs, workDir, prefix: launchPrefix(generatorCore) });
}

function runSegment(scenario: Scenario, target: Target, pool: ReturnType<typeof createLoadPool>): Promise<SegmentResult> {
  if (scenario.kind === 'closed') return closedLoop(target, pool, scenario.connections, plan.segmentMs);
  return runOpenLoop(pool, specFor(target, scenario.kind === 'stream'), { rate: scenario.rate, durationMs: plan.segmentMs, drainMs: REQUEST_TIMEOUT_MS });
}

function emptyTotals(): TargetTotals {
  return { completed: 0, errors: 0, wallMs: 0, cpuSeconds: 0, othersOnCoreSeconds: 0, latencies: [], firstByte: [], reads: [], sendLag: [], rssMiB: Number.NaN };
}

async function benchmark(): Promise<void> {
  const started = Date.now();
  const loadBefore = loadavg()[0] ?? 0;
  const mock = await startMock(workDir, generatorCore, mockSettings);
  const targets = await startTargets(mock);
  const pools = new Map(targets.map((target) => [target.name, createLoadPool(target.origin, 256)]));
  const poolOf = (target: Target): ReturnType<typeof createLoadPool> => pools.get(target.name) ?? createLoadPool(target.origin, 256);
  log(`targets: ${targets.map((target) => TARGET_LABELS[target.name]).join(', ')}; ${pin ? 'pinned' : 'NOT pinned'}`);
  for (const target of targets) {
    log(`warming up ${TARGET_LABELS[target.name]}…`);
    await warmUp(target, poolOf(target));
  }

  const results: ScenarioResult[] = [];
  for (const scenario of SCENARIOS) {
    const totals = new Map<TargetName, TargetTotals>(targets.map((target) => [target.name, emptyTotals()]));
    for (let round = 1; round <= plan.rounds; round++) {
      // Interleaved (A B C D A B C D…): slow drift of a shared machine hits every target alike.
      for (const target of targets) {
        const sum = totals.get(target.name) ?? emptyTotals();
        await waitUntilIdle(target.process.pid);
        const cpuBefore = cpuSeconds(target.process.pid);
        const coreBefore = coreBusySeconds(TARGET_CORE);
        const segment = await runSegment(scenario, target, poolOf(target));
        const cpu = cpuSeconds(target.process.pid) - cpuBefore;
        // What else ran on the target's core meanwhile: the noise of a shared machine.
        if (pin && target.name !== 'direct') sum.othersOnCoreSeconds += Math.max(0, coreBusySeconds(TARGET_CORE) - coreBefore - cpu);
        sum.completed += segment.completed;
        sum.errors += segment.errors;
        sum.wallMs += segment.wallMs;
        sum.cpuSeconds += cpu;
        for (const key of ['latencies', 'firstByte', 'reads', 'sendLag'] as const) for (const value of segment[key]) sum[key].push(value);
        if (round === plan.rounds) sum.rssMiB = rssMiB(target.process.pid);
        if (segment.unfinished > 0) {
          // A target that fell behind must not work off its backlog during the next target's turn.
          await pools.get(target.name)?.destroy().catch(() => undefined);
          pools.set(target.name, createLoadPool(target.origin, 256));
        }
        const rate = segment.completed / (segment.wallMs / 1000);
        log(`[${scenario.id}] round ${round}/${plan.rounds} ${TARGET_LABELS[target.name]}: ${rate.toFixed(0)} req/s, CPU ${cpu.toFixed(2)} s, errors ${segment.errors}${segment.firstFailure === undefined ? '' : ` (${segment.firstFailure})`}`);
        await sleep(plan.pauseMs);
      }
    }
    results.push({ scenario, totals });
  }

  for (const pool of pools.values()) await pool.destroy();
  for (const target of targets) await target.process.stop();
  await mock.process.stop();
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const report = renderReport(
    {
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
      command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
      machine: `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Linux ${release()}, Node ${process.version}; load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after (shared machine)`,
      pinning: `${pin ? `targets on core ${TARGET_CORE}; load generator and mock on core ${GENERATOR_CORE} (taskset)` : 'none (taskset missing, fewer than 2 cores, or --no-pin): per-core figures still hold, latencies are noisier'}`,
      plan: `${plan.rounds} interleaved round(s) × ${plan.segmentMs / 1000} s per target per scenario after a ${plan.warmupMs / 1000} s warm-up; ${minutes} min in all. Closed loop on ${wrk === undefined ? 'the Node generator' : 'wrk -t1'}. aigateway: API-key auth, saved config "${targets.find((target) => target.name === 'aigateway')?.headers['x-gateway-config'] ?? '–'}", metrics on, JSON request log to a file. Mock: ${COMPLETION_BODY.length}-byte chat.completion after ${mockSettings.delayMs} ms.`,
      notes,
    },
    results,
  );
  const sections = await featureSections();
  const file = join(resultsDir, `bench-${stamp}${quick ? '-quick' : ''}.md`);
  writeFileSync(file, report + sections);
  process.stdout.write(`\n${report}${sections}`);
  log(`\nsaved ${file.slice(REPO_ROOT.length + 1)}`);
}

// The features of this round, each measured by its own module (bench/<feature>.ts, owned with
// the feature) as a function that returns a markdown table or a result with one. A module not
// there yet, or without such a function, gets a line saying so instead of a section.
const FEATURE_SECTIONS = {
  mcp: { title: 'MCP tools/call, through the gateway vs direct', module: './mcp-tools-call.ts' },
  budgets: { title: 'A request under an active cost policy vs none (memory and Redis)', module: './budget-overhead.ts' },
  console: { title: 'Load with the console polling beside it', module: './console-polling.ts' },
} as const;

async function featureSections(): Promise<string> {
  const wanted = options.features === 'none' ? [] : options.features.split(',').map((name) => name.trim()).filter((name) => name !== '');
  const out: string[] = [];
  for (const name of wanted) {
    const section = FEATURE_SECTIONS[name as keyof typeof FEATURE_SECTIONS];
    if (section === undefined) {
      reportNote(`unknown --features entry "${name}" (known: ${Object.keys(FEATURE_SECTIONS).join(', ')})`);
      continue;
    }
    log(`feature section: ${section.title}…`);
    out.push(`\n## ${section.title}\n\n${await runFeatureSection(section.module)}\n`);
  }
  return out.join('');
}

/** Calls the module's `bench…` function (quick settings with --quick) and renders its table. */
async function runFeatureSection(modulePath: string): Promise<string> {
  let exported: Record<string, unknown>;
  try {
    // A variable specifier: a module that has not landed yet is a note, not a type error.
    const specifier: string = modulePath;
    exported = (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    return `Not measured: \`bench/${modulePath.slice(2)}\` could not be loaded (${(error as Error).message.split('\n')[0]}).`;
  }
  const entries = Object.entries(exported);
  const run = entries.find(([key, value]) => /^bench[A-Z]/.test(key) && typeof value === 'function')?.[1] as ((settings: object) => Promise<unknown>) | undefined;
  if (run === undefined) return `Not measured: \`bench/${modulePath.slice(2)}\` exports no \`bench…(options)\` function yet.`;
  // Budgets measure on Redis too (REDIS_URL or 127.0.0.1:6379); modules ignore settings they do not take.
  const settings = { redis: true, ...(quick ? { seconds: 1, rounds: 1, calls: 500, warmup: 100 } : {}) };
  try {
    const result = await run(settings);
    if (typeof result === 'string') return result;
    const table = (result as { table?: unknown } | undefined)?.table;
    if (typeof table === 'string') return table;
    const render = entries.find(([key, value]) => /Table$/.test(key) && typeof value === 'function')?.[1] as ((value: unknown) => string) | undefined;
    return render === undefined ? `\`\`\`json\n${JSON.stringify(result, null, 2)}\n\`\`\`` : render(result);
  } catch (error) {
    return `Not measured: the run failed (${(error as Error).message.split('\n')[0]}).`;
  }
}

/** --profile: aigateway (or, with --targets bare, the bare proxy) under the closed loop with --cpu-prof. */
async function profile(): Promise<void> {
  const profileDir = join(resultsDir, `profile-${stamp}`);
  mkdirSync(profileDir, { recursive: true });
  const mock = await startMock(workDir, generatorCore, mockSettings);
  const nodeFlags = ['--cpu-prof', '--cpu-prof-dir', profileDir];
  const bare = options.targets === 'bare';
  const gateway = bare
    ? await startBare(workDir, targetCore, mock.origin, nodeFlags)
    : await startAigateway({ core: targetCore, workDir, mockOrigin: mock.origin, routing, nodeFlags });
  if (!(await admit(gateway))) throw new Error(`${TARGET_LABELS[gateway.name]} did not answer the probe`);
  const pool = createLoadPool(gateway.origin, 64);
  await warmUp(gateway, pool);
  log(`profiling ${TARGET_LABELS[gateway.name]}: closed loop, 50 connections, ${plan.profileMs / 1000} s…`);
  const cpuBefore = cpuSeconds(gateway.process.pid);
  // V8 stamps samples with the machine's monotonic clock (µs), the one hrtime reads.
  const fromUs = Number(process.hrtime.bigint() / 1000n);
  const segment = await closedLoop(gateway, pool, 50, plan.profileMs);
  const window = { fromUs, toUs: Number(process.hrtime.bigint() / 1000n) };
  const cpu = cpuSeconds(gateway.process.pid) - cpuBefore;
  await pool.destroy();
  await gateway.process.stop(20_000); // the profile is written as the process exits
  await mock.process.stop();
  // One file per thread: CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main one.
  const files = readdirSync(profileDir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort((a, b) => threadOf(a) - threadOf(b));
  const file = files[0];
  if (file === undefined) throw new Error(`no .cpuprofile in ${profileDir}`);
  const workers = files.slice(1).flatMap((name) => [
    `### Worker thread ${threadOf(name)} (\`${name}\`)`,
    '',
    'Its CPU time counts in req/s per core too, but not in the main thread\'s percentages above.',
    '',
    summariseProfileFile(join(profileDir, name), { window, top: 10 }),
  ]);
  const rate = segment.completed / (segment.wallMs / 1000);
  const summary = [
    `## ${TARGET_LABELS[gateway.name]} CPU profile — ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `- Command: \`npm run bench -- ${process.argv.slice(2).join(' ')}\`; profile: \`${join(profileDir, file).slice(REPO_ROOT.length + 1)}\``,
    `- Load: closed loop, 50 connections, ${plan.profileMs / 1000} s after warm-up (only samples from that window count); ${rate.toFixed(0)} req/s, ${(segment.completed / cpu).toFixed(0)} req/s per core under the profiler`,
    ...notes.map((note) => `- Note: ${note}`),
    '',
    `### Main thread`,
    '',
    summariseProfileFile(join(profileDir, file), { window }),
    ...workers,
    `Re-summarise: \`node bench/cpu-profile-summary.ts ${join(profileDir, file).slice(REPO_ROOT.length + 1)} --from-us ${window.fromUs} --to-us ${window.toUs}\` (other threads: the other files in that folder).`,
    '',
  ].join('\n');
  const out = join(resultsDir, `profile-${stamp}.md`);
  writeFileSync(out, summary);
  process.stdout.write(`\n${summary}`);
  log(`\nsaved ${out.slice(REPO_ROOT.length + 1)}`);
}

function threadOf(profileFile: string): number {
  return Number(profileFile.split('.').at(-3) ?? 0);
}

try {
  await (options.profile ? profile() : benchmark());
} finally {
  if (!options['keep-logs']) rmSync(workDir, { recursive: true, force: true });
  else log(`process output and logs kept in ${workDir}`);
}
