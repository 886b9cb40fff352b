import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { markdownTable } from './report.ts';

// Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went: time by
// package / area, the hottest functions by self time, and aigateway's own functions by
// total (inclusive) time. A time window (monotonic µs) keeps start-up and warm-up out.
//   node bench/cpu-profile-summary.ts <file.cpuprofile> [--top 25] [--from-us N --to-us N]

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  /** Monotonic clock, µs: the same clock as process.hrtime() in any process on the machine. */
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

interface FunctionTime {
  readonly name: string;
  readonly location: string;
  readonly area: string;
  self: number;
  total: number;
}

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A path inside an aigateway checkout (this one, or another tree profiled for an A/B), relative to its root. */
function repoRelative(path: string): string | undefined {
  if (path.startsWith(REPO_ROOT)) return path.slice(REPO_ROOT.length);
  if (path.includes('/node_modules/')) return undefined;
  return /\/((?:proxy|bin|operator)\/.*)$/.exec(path)?.[1];
}

function locationOf(frame: CallFrame): string {
  if (frame.url === '') return '';
  const path = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  const relative = repoRelative(path) ?? path;
  return `${relative.replace(/^.*node_modules\//, '')}:${frame.lineNumber + 1}`;
}

/** The area a frame belongs to: aigateway's folders, a package, node's internals, or V8. */
function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : 'V8 builtins / native';
  if (url.startsWith('wasm://')) return 'wasm (undici\'s llhttp parser)';
  // node:internal/streams/readable → "node streams", node:_http_outgoing → "node http".
  if (url.startsWith('node:')) {
    const segment = url.slice(5).replace(/^internal\//, '').split('/')[0] ?? '';
    return `node ${segment.startsWith('_') ? segment.slice(1).split('_')[0] : segment}`;
  }
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (modules?.[1] !== undefined) return modules[1];
  const relative = repoRelative(url.startsWith('file://') ? fileURLToPath(url) : url);
  if (relative !== undefined) {
    const [top, second] = relative.split('/');
    return top === 'proxy' && second !== undefined && !second.endsWith('.ts') ? `aigateway proxy/${second}/` : `aigateway ${top}/`;
  }
  return 'other';
}

type FramePredicate = (frame: CallFrame, location: string) => boolean;

// aigateway's features, tested from the innermost frame outwards: a sample counts for the
// first feature one of its frames belongs to (so undici under the routing walk is undici).
const FEATURES: ReadonlyArray<readonly [string, FramePredicate]> = [
  ['request log line (pino → file)', (f, at) => /\/(pino|sonic-boom|@pinojs\/[^/]+)\//.test(f.url) || at.startsWith('proxy/observability/log-line.ts')],
  ['log store hand-off (records → SQLite worker)', (f, at) => at.startsWith('proxy/logs/') || at.startsWith('proxy/observability/request-record') || f.url === 'node:internal/worker'],
  ['tracing (OpenTelemetry)', (f, at) => f.url.includes('/@opentelemetry/') || at.startsWith('proxy/observability/tracing')],
  ['Prometheus metrics', (f, at) => f.url.includes('/prom-client/') || /^proxy\/observability\/(observe-request|metric-series|gateway-metrics)\.ts/.test(at)],
  ['API-key auth', (_f, at) => at.startsWith('proxy/auth/')],
  ['duplicate-key scan', (_f, at) => at.startsWith('proxy/openai/json-duplicate-keys.ts')],
  ['body parse (JSON.parse of the request)', (f, at) => at.startsWith('proxy/gateway-server.ts') && f.functionName === 'parseJsonBody'],
  ['body validation (zod)', (f, at) => f.url.includes('/zod/') || at.startsWith('proxy/openai/body-validation') || /^proxy\/endpoints\/[a-z-]*body[a-z-]*\.ts/.test(at)],
  ['context, trace id, in-flight slots (onRequest hook)', (f, at) => (at.startsWith('proxy/gateway-server.ts') && /^(admitRequest|releaseSlots|traceIdFor|parseMetadata)$/.test(f.functionName)) || at.startsWith('proxy/request-context.ts')],
  ['accounting at the end (finish, cost)', (_f, at) => at.startsWith('proxy/observability/request-finish') || at.startsWith('proxy/accounting/')],
  ['rate limits, budgets, policies', (_f, at) => at.startsWith('proxy/ratelimit/') || at.startsWith('proxy/budgets/') || at.startsWith('proxy/endpoints/policy-admission') || at.startsWith('proxy/endpoints/forwarded-policies')],
  ['reading the upstream answer (usage)', (f, at) => /^proxy\/(upstream|endpoints)\//.test(at) && /^(readAll|parseJson|noteUsage|usageOf|recordUsage)$/.test(f.functionName)],
  ['routing (select, walk, resolve)', (_f, at) => at.startsWith('proxy/routing/') || at.startsWith('proxy/resilience/')],
  ['upstream call (adapter, guarded call, egress)', (_f, at) => at.startsWith('proxy/upstream/') || at.startsWith('proxy/providers/')],
  ['relay (answer to the client)', (_f, at) => at.startsWith('proxy/endpoints/relay-response') || at.startsWith('proxy/streams/')],
  ['MCP, WebSocket, console', (_f, at) => /^proxy\/(mcp|websocket|console)\//.test(at)],
  ['upstream HTTP client (undici)', (f) => f.url.includes('/undici/') || f.url.startsWith('wasm://')],
  ['other aigateway code (handlers, hooks)', (_f, at) => at.startsWith('proxy/') || at.startsWith('bin/')],
  ['HTTP server and sockets (fastify, node:http, net, streams)', (f) => /\/(fastify|find-my-way|avvio|toad-cache|@fastify\/[^/]+)\//.test(f.url) || /^node:(_http_|net|internal\/(http|streams|stream_base|net))/.test(f.url)],
  ['garbage collector', (f) => f.functionName === '(garbage collector)'],
];

export interface ProfileSummary {
  /** Sampled time excluding (idle), in ms. */
  readonly busyMs: number;
  readonly idleMs: number;
  /** Main-thread ms per aigateway feature (innermost match), then "other". */
  readonly features: ReadonlyArray<readonly [string, number]>;
  /** Per area: self ms, and ms of samples with the area anywhere on the stack. */
  readonly areas: ReadonlyArray<readonly [string, number, number]>;
  readonly functions: readonly FunctionTime[];
}

export interface ProfileWindow {
  readonly fromUs: number;
  readonly toUs: number;
}

export function summariseProfile(profile: CpuProfile, window?: ProfileWindow): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const functions = new Map<string, FunctionTime>();
  const functionFor = (frame: CallFrame): FunctionTime => {
    const location = locationOf(frame);
    const key = `${frame.functionName}@${location}`;
    let entry = functions.get(key);
    if (entry === undefined) {
      entry = { name: frame.functionName || '(anonymous)', location, area: areaOf(frame), self: 0, total: 0 };
      functions.set(key, entry);
    }
    return entry;
  };

  const areas = new Map<string, number>();
  const areasOnStack = new Map<string, number>();
  const features = new Map<string, number>();
  let busyUs = 0;
  let idleUs = 0;
  let at = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    at += profile.timeDeltas[index] ?? 0;
    const node = byId.get(profile.samples[index] ?? -1);
    // A sample lasts until the next one is taken.
    const duration = profile.timeDeltas[index + 1] ?? 0;
    if (node === undefined || duration <= 0) continue;
    if (window !== undefined && (at < window.fromUs || at > window.toUs)) continue;
    if (node.callFrame.functionName === '(idle)') {
      idleUs += duration;
      continue;
    }
    busyUs += duration;
    const self = functionFor(node.callFrame);
    self.self += duration;
    areas.set(self.area, (areas.get(self.area) ?? 0) + duration);
    // Inclusive time: each function on the stack once, however deep the recursion.
    const seen = new Set<FunctionTime>();
    const seenAreas = new Set<string>();
    let feature: string | undefined;
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)?.callFrame;
      if (frame === undefined || frame.functionName === '(root)') continue;
      const entry = functionFor(frame);
      feature ??= FEATURES.find(([, belongs]) => belongs(frame, entry.location))?.[0];
      if (!seen.has(entry)) {
        seen.add(entry);
        entry.total += duration;
      }
      seenAreas.add(entry.area);
    }
    for (const area of seenAreas) areasOnStack.set(area, (areasOnStack.get(area) ?? 0) + duration);
    const bucket = feature ?? 'other (node, V8)';
    features.set(bucket, (features.get(bucket) ?? 0) + duration);
  }
  return {
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    features: [...features].sort((a, b) => b[1] - a[1]).map(([name, us]) => [name, us / 1000] as const),
    areas: [...areas].sort((a, b) => b[1] - a[1]).map(([area, us]) => [area, us / 1000, (areasOnStack.get(area) ?? us) / 1000] as const),
    functions: [...functions.values()].map((entry) => ({ ...entry, self: entry.self / 1000, total: entry.total / 1000 })),
  };
}

export function renderProfileSummary(summary: ProfileSummary, top = 25): string {
  const pct = (ms: number): string => `${((100 * ms) / summary.busyMs).toFixed(1)}%`;
  const areaRows = summary.areas.slice(0, 30).map(([area, self, onStack]) => [area, pct(self), pct(onStack)]);
  const hottest = [...summary.functions].sort((a, b) => b.self - a.self).slice(0, top);
  const ours = summary.functions
    .filter((entry) => entry.area.startsWith('aigateway'))
    .sort((a, b) => b.total - a.total)
    .slice(0, 20);
  const code = (text: string): string => (text === '' ? '' : `\`${text}\``);
  return [
    `Busy (non-idle) sampled time: ${summary.busyMs.toFixed(0)} ms; idle: ${summary.idleMs.toFixed(0)} ms. Percentages are of busy time.`,
    '',
    '#### Time by gateway feature',
    '',
    'Each sample counts for the innermost frame that belongs to a feature (e.g. undici called by the routing walk counts as undici).',
    '',
    markdownTable(['feature', 'share'], summary.features.map(([name, ms]) => [name, pct(ms)])),
    '',
    '#### Time by area',
    '',
    '"self": samples whose innermost frame is in the area; "on stack": samples with the area anywhere on the (synchronous) stack.',
    '',
    markdownTable(['area', 'self', 'on stack'], areaRows),
    '',
    `#### Top ${top} functions by self time`,
    '',
    markdownTable(
      ['function', 'where', 'self', 'total'],
      hottest.map((entry) => [code(entry.name), code(entry.location || entry.area), pct(entry.self), pct(entry.total)]),
    ),
    '',
    '#### aigateway functions by total (inclusive) time',
    '',
    markdownTable(
      ['function', 'where', 'total', 'self'],
      ours.map((entry) => [code(entry.name), code(entry.location), pct(entry.total), pct(entry.self)]),
    ),
    '',
  ].join('\n');
}

export function summariseProfileFile(path: string, options: { top?: number; window?: ProfileWindow } = {}): string {
  return renderProfileSummary(summariseProfile(JSON.parse(readFileSync(path, 'utf8')) as CpuProfile, options.window), options.top);
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' }, 'from-us': { type: 'string' }, 'to-us': { type: 'string' } },
  });
  const file = positionals[0];
  if (file === undefined) {
    process.stderr.write('usage: node bench/cpu-profile-summary.ts <file.cpuprofile> [--top N] [--from-us N --to-us N]\n');
    process.exit(2);
  }
  const window = values['from-us'] === undefined ? undefined : { fromUs: Number(values['from-us']), toUs: Number(values['to-us'] ?? Infinity) };
  process.stdout.write(summariseProfileFile(file, { top: Number(values.top), window }));
}
