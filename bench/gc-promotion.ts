// What a request leaves to V8's old generation (issue 32): aigateway as in production (the
// CLI, the fallback config, logs on) with --trace-gc-nvp, then an open loop of plain requests
// and one of streams. Per phase: the scavenges' allocated and promoted bytes and their pauses,
// per request. A request's objects should die young; bytes promoted per request are objects
// something kept alive past a scavenge (docs/performance.md: an object listener on an
// AbortSignal, a per-stream object literal with accessors). The floor promotes ≈ 0.1–0.3 KB.
//   node bench/gc-promotion.ts [--rate 400] [--stream-rate 200] [--seconds 5]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLoadPool, runOpenLoop, type RequestSpec } from './load-generator.ts';
import { markdownTable } from './report.ts';
import { startAigateway, startMock, tasksetAvailable } from './targets.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '400' },
    'stream-rate': { type: 'string', default: '200' },
    seconds: { type: 'string', default: '5' },
  },
});
const RATE = Number(values.rate);
const STREAM_RATE = Number(values['stream-rate']);
const SECONDS = Number(values.seconds);
if (!(RATE > 0 && STREAM_RATE > 0 && SECONDS > 0)) throw new Error('--rate, --stream-rate and --seconds must be positive');

interface GcTotals {
  scavenges: number;
  markCompacts: number;
  allocated: number;
  promoted: number;
  pauseMs: number;
}

/** The --trace-gc-nvp lines of `text` (one GC each): scavenges summed, mark-compacts counted. */
function gcTotals(text: string): GcTotals {
  const totals: GcTotals = { scavenges: 0, markCompacts: 0, allocated: 0, promoted: 0, pauseMs: 0 };
  for (const line of text.split('\n')) {
    const kind = /\bgc=(\w+)/.exec(line)?.[1];
    if (kind === undefined) continue;
    if (kind !== 's') {
      totals.markCompacts++;
      continue;
    }
    totals.scavenges++;
    totals.allocated += Number(/\ballocated=(\d+)/.exec(line)?.[1] ?? 0);
    totals.promoted += Number(/\bpromoted=(\d+)/.exec(line)?.[1] ?? 0);
    totals.pauseMs += Number(/\bpause=([\d.]+)/.exec(line)?.[1] ?? 0);
  }
  return totals;
}

const pinned = tasksetAvailable();
const workDir = mkdtempSync(join(tmpdir(), 'aigw-gc-promotion-'));
const mock = await startMock(workDir, pinned ? 1 : undefined, { delayMs: 0, chunks: 20, chunkIntervalMs: 5 });
const gateway = await startAigateway({ core: pinned ? 0 : undefined, workDir, mockOrigin: mock.origin, routing: 'fallback', nodeFlags: ['--trace-gc-nvp'] });
const pool = createLoadPool(gateway.origin, 256);
const body = (stream: boolean): Buffer =>
  Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise connection pooling in two sentences.' }], max_tokens: 128, ...(stream ? { stream: true } : {}) }));
const plain: RequestSpec = { path: '/v1/chat/completions', headers: gateway.headers, body: body(false) };
const streams: RequestSpec = { path: '/v1/chat/completions', headers: gateway.headers, body: body(true) };

const rows: string[][] = [];
try {
  // Warm-up: the code optimised, the young generation at its working size.
  await runOpenLoop(pool, plain, { rate: RATE, durationMs: 3_000, drainMs: 5_000 });
  await runOpenLoop(pool, streams, { rate: STREAM_RATE, durationMs: 3_000, drainMs: 5_000 });
  for (const [name, spec, rate] of [['plain', plain, RATE], ['streams', streams, STREAM_RATE]] as const) {
    const before = readFileSync(gateway.process.outputPath, 'utf8').length;
    const result = await runOpenLoop(pool, spec, { rate, durationMs: SECONDS * 1000, drainMs: 5_000 });
    const totals = gcTotals(readFileSync(gateway.process.outputPath, 'utf8').slice(before));
    const requests = result.latencies.length;
    const perRequest = (bytes: number): string => (requests === 0 ? '–' : `${(bytes / requests / 1024).toFixed(1)} KiB`);
    rows.push([
      `${name} at ${rate}/s`,
      String(requests),
      String(totals.scavenges),
      perRequest(totals.allocated),
      perRequest(totals.promoted),
      `${totals.pauseMs.toFixed(0)} ms`,
      String(totals.markCompacts),
    ]);
  }
} finally {
  await pool.close();
  await gateway.process.stop();
  await mock.process.stop();
  rmSync(workDir, { recursive: true, force: true });
}
console.log(markdownTable(['phase', 'answered', 'scavenges', 'allocated / request', 'promoted / request', 'scavenge pauses', 'full GCs'], rows));
