import { mean, percentile } from './load-generator.ts';
import { TARGET_LABELS, type TargetName } from './targets.ts';

// Turns the measured segments into markdown: one table per scenario, the ratios the issue
// asks for, and a check of each of the targets.

export type ScenarioKind = 'open' | 'closed' | 'stream';

export interface Scenario {
  readonly id: 'open-500' | 'open-1500' | 'closed' | 'stream';
  readonly title: string;
  readonly kind: ScenarioKind;
  /** Requests (or streams) per second, for open-loop kinds. */
  readonly rate: number;
  /** Concurrent connections, for the closed loop. */
  readonly connections: number;
}

/** One target's numbers in one scenario, summed over the interleaved rounds. */
export interface TargetTotals {
  completed: number;
  errors: number;
  wallMs: number;
  cpuSeconds: number;
  /** CPU seconds other processes used on the target's core during its segments (pinned runs). */
  othersOnCoreSeconds: number;
  latencies: number[];
  firstByte: number[];
  reads: number[];
  sendLag: number[];
  /** RSS right after this scenario's last round. */
  rssMiB: number;
}

export interface ScenarioResult {
  readonly scenario: Scenario;
  readonly totals: ReadonlyMap<TargetName, TargetTotals>;
}

interface Row {
  readonly target: TargetName;
  readonly rate: number;
  readonly perCore: number;
  readonly cpuShare: number;
  /** Full-response latency, or time to first byte for streams. */
  readonly p50: number;
  readonly p99: number;
  readonly overheadP50: number;
  readonly overheadP99: number;
  readonly totals: TargetTotals;
}

function rowsFor(result: ScenarioResult): Row[] {
  const stream = result.scenario.kind === 'stream';
  const pick = (totals: TargetTotals): number[] => (stream ? totals.firstByte : totals.latencies);
  const direct = result.totals.get('direct');
  const directP50 = direct === undefined ? Number.NaN : percentile(pick(direct), 50);
  const directP99 = direct === undefined ? Number.NaN : percentile(pick(direct), 99);
  const rows: Row[] = [];
  for (const [target, totals] of result.totals) {
    const p50 = percentile(pick(totals), 50);
    const p99 = percentile(pick(totals), 99);
    const seconds = totals.wallMs / 1000;
    rows.push({
      target,
      rate: totals.completed / seconds,
      perCore: totals.cpuSeconds > 0 ? totals.completed / totals.cpuSeconds : Number.NaN,
      cpuShare: totals.cpuSeconds / seconds,
      p50,
      p99,
      overheadP50: target === 'direct' ? Number.NaN : p50 - directP50,
      overheadP99: target === 'direct' ? Number.NaN : p99 - directP99,
      totals,
    });
  }
  return rows;
}

const fmt = {
  int: (value: number): string => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–'),
  ms: (value: number): string => (Number.isFinite(value) ? value.toFixed(value < 10 ? 2 : 1) : '–'),
  signedMs: (value: number): string => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${value.toFixed(2)}` : '–'),
  pct: (value: number): string => (Number.isFinite(value) ? `${(value * 100).toFixed(value < 1 ? 1 : 0)}%` : '–'),
  ratio: (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}×` : '–'),
  mib: (value: number): string => (Number.isFinite(value) ? value.toFixed(0) : '–'),
};

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map((_, index) => (index === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

export function scenarioTable(result: ScenarioResult): string {
  const rows = rowsFor(result);
  const stream = result.scenario.kind === 'stream';
  const what = stream ? 'TTFB' : 'latency';
  const header = [
    'target',
    stream ? 'streams/s' : 'req/s',
    `${stream ? 'streams' : 'req'}/s per core`,
    'CPU (cores)',
    'others on core²',
    `${what} p50 ms`,
    `${what} p99 ms`,
    'overhead p50 ms',
    'overhead p99 ms',
    ...(stream ? ['stream p50 ms', 'reads/stream'] : []),
    'errors',
    'RSS MiB',
  ];
  const body = rows.map((row) => [
    row.target === 'direct' ? `${TARGET_LABELS[row.target]}¹` : TARGET_LABELS[row.target],
    fmt.int(row.rate),
    fmt.int(row.perCore),
    row.cpuShare.toFixed(2),
    row.target === 'direct' ? '–' : fmt.pct(row.totals.othersOnCoreSeconds / (row.totals.wallMs / 1000)),
    fmt.ms(row.p50),
    fmt.ms(row.p99),
    fmt.signedMs(row.overheadP50),
    fmt.signedMs(row.overheadP99),
    ...(stream ? [fmt.ms(percentile(row.totals.latencies, 50)), mean(row.totals.reads).toFixed(1)] : []),
    fmt.int(row.totals.errors),
    fmt.mib(row.totals.rssMiB),
  ]);
  const lag = percentile(
    rows.flatMap((row) => row.totals.sendLag),
    99,
  );
  const notes = [ratioLine(rows)];
  if (result.scenario.kind !== 'closed') notes.push(`Generator send lag p99: ${fmt.ms(lag)} ms (timer granularity; same for every target).`);
  return `### ${result.scenario.title}\n\n${markdownTable(header, body)}\n\n${notes.join(' ')}`;
}

function ratioLine(rows: readonly Row[]): string {
  const perCore = (target: TargetName): number => rows.find((row) => row.target === target)?.perCore ?? Number.NaN;
  const ours = perCore('aigateway');
  return `Per core: aigateway/peer **${fmt.ratio(ours / perCore('peer'))}**, aigateway/bare **${fmt.pct(ours / perCore('bare'))}**.`;
}

interface Check {
  readonly goal: string;
  readonly measured: number;
  readonly limit: number;
  /** true: measured must be ≥ limit; false: ≤ limit. */
  readonly atLeast: boolean;
  readonly show: (value: number) => string;
  /** A latency measured while other processes held much of the core: no verdict. */
  readonly noisy?: boolean;
}

/** Above this share of the target's core used by others, a latency check gets no verdict. */
const NOISY_SHARE = 0.1;

/** The targets, each measured → ✅ / ❌ (– when a reference point is missing). */
export function targetsTable(results: readonly ScenarioResult[]): string {
  const rowsById = new Map(results.map((result) => [result.scenario.id, rowsFor(result)]));
  const get = (id: Scenario['id'], target: TargetName): Row | undefined => rowsById.get(id)?.find((row) => row.target === target);
  const ours = (id: Scenario['id']): Row | undefined => get(id, 'aigateway');
  const perCoreRatio = (other: TargetName): number => (ours('closed')?.perCore ?? Number.NaN) / (get('closed', other)?.perCore ?? Number.NaN);
  const noisy = (id: Scenario['id']): boolean => {
    const row = ours(id);
    return row !== undefined && row.totals.othersOnCoreSeconds / (row.totals.wallMs / 1000) > NOISY_SHARE;
  };
  const rssAfter = (target: TargetName): number => Math.max(...results.map((result) => result.totals.get(target)?.rssMiB ?? Number.NaN));
  // Latency against the floor: the bare proxy's percentile is the reference, not direct's.
  const overFloor = (id: Scenario['id'], pick: (row: Row) => number): number => {
    const mine = ours(id);
    const floor = get(id, 'bare');
    return mine === undefined || floor === undefined ? Number.NaN : pick(mine) - pick(floor);
  };
  const checks: Check[] = [
    { goal: 'req/s per core ≥ 5× peer (closed loop)', measured: perCoreRatio('peer'), limit: 5, atLeast: true, show: fmt.ratio },
    { goal: 'req/s per core ≥ 0.6× the floor (closed loop)', measured: perCoreRatio('bare'), limit: 0.6, atLeast: true, show: fmt.pct },
    { goal: 'p50 at 500 req/s within 0.1 ms of the floor', measured: overFloor('open-500', (row) => row.p50), limit: 0.1, atLeast: false, show: fmt.signedMs, noisy: noisy('open-500') },
    { goal: 'p99 at 500 req/s within 0.5 ms of the floor', measured: overFloor('open-500', (row) => row.p99), limit: 0.5, atLeast: false, show: fmt.signedMs, noisy: noisy('open-500') },
    { goal: 'stream TTFB p50 within 0.2 ms of the floor', measured: overFloor('stream', (row) => row.p50), limit: 0.2, atLeast: false, show: fmt.signedMs, noisy: noisy('stream') },
    { goal: 'RSS after the run ≤ the floor + 30 MiB', measured: rssAfter('aigateway') - rssAfter('bare'), limit: 30, atLeast: false, show: (value) => `${value >= 0 ? '+' : ''}${fmt.mib(value)} MiB` },
  ];
  const rows = checks.map((check) => {
    const known = Number.isFinite(check.measured);
    const met = check.atLeast ? check.measured >= check.limit : check.measured <= check.limit;
    const verdict = !known ? '–' : check.noisy === true ? `❔ (others held > ${NOISY_SHARE * 100}% of the core)` : met ? '✅' : '❌';
    return [check.goal, check.show(check.measured), verdict];
  });
  return markdownTable(['issue 32 target (same checks as ../shared/tools/bench-side-by-side)', 'measured', 'met'], rows);
}

export interface ReportMeta {
  readonly date: string;
  readonly command: string;
  readonly machine: string;
  readonly pinning: string;
  readonly plan: string;
  readonly notes: readonly string[];
}

export function renderReport(meta: ReportMeta, results: readonly ScenarioResult[]): string {
  const parts = [
    `## aigateway benchmark — ${meta.date}`,
    '',
    `- Command: \`${meta.command}\``,
    `- Machine: ${meta.machine}`,
    `- Pinning: ${meta.pinning}`,
    `- Plan: ${meta.plan}`,
    ...meta.notes.map((note) => `- Note: ${note}`),
    '',
    ...results.flatMap((result) => [scenarioTable(result), '']),
    '### Against the issue\'s targets',
    '',
    targetsTable(results),
    '',
    '¹ For "direct" the CPU and RSS columns are the mock\'s own (it runs on the load generator\'s core). ' +
      'Latency counts from the scheduled send time (open loop) or the send (closed loop); overhead = target percentile − direct percentile. ' +
      'req/s per core = requests ÷ CPU seconds the target process used during its segments.\n' +
      '² Share of the target\'s core used by other processes during its segments (other engineers\' tests on this shared machine): above a few % the latencies are noise, the per-core figures less so.',
  ];
  return `${parts.join('\n')}\n`;
}
