import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestSpec, SegmentResult } from './load-generator.ts';

// The closed loop on wrk, when it is installed: the shared yardstick
// (../shared/tools/bench-side-by-side) measures throughput with `wrk -t1 -c50`, and a
// generator written in Node cannot keep up with it on the core it shares with the mock. A
// target that is not saturated pays more CPU per request (an event-loop turn and a write
// per request instead of many per turn), the bare floor more so than aigateway, which made
// `npm run bench` report ≈ 0.5× the floor where the yardstick reported ≈ 0.35×
// (docs/performance.md, "Two benches, one answer").

/** wrk's path on PATH, or undefined. */
export function wrkPath(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, 'wrk'))) return join(dir, 'wrk');
  }
  return undefined;
}

// Latency comes back as 999 quantiles (0.1 %, 0.2 %, …), standing in for the samples, so
// the report's percentiles read the same way as for the Node generator.
const SCRIPT_TAIL = `
done = function(summary, latency, requests)
  local parts = {}
  for i = 1, 999 do parts[#parts + 1] = string.format("%.3f", latency:percentile(i / 10) / 1000) end
  io.write(string.format("WRK {\\"requests\\":%d,\\"durationUs\\":%d,\\"non2xx\\":%d,\\"errors\\":%d,\\"quantiles\\":[%s]}\\n",
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, table.concat(parts, ",")))
end
`;

/** A closed loop of `connections` for `durationMs`, by wrk (pinned with `prefix`, e.g. taskset). */
export async function runWrkClosedLoop(
  wrk: string,
  origin: string,
  spec: RequestSpec,
  options: { connections: number; durationMs: number; workDir: string; prefix: readonly string[] },
): Promise<SegmentResult> {
  const bodyFile = join(options.workDir, `wrk-body-${spec.body.length}.json`);
  writeFileSync(bodyFile, spec.body);
  const script = join(options.workDir, `wrk-${Buffer.from(origin).toString('hex').slice(-12)}.lua`);
  const lines = [
    `local f = io.open(${JSON.stringify(bodyFile)}, "rb")`,
    'wrk.method = "POST"',
    'wrk.body = f:read("*a")',
    'f:close()',
    `wrk.path = ${JSON.stringify(spec.path)}`,
    ...Object.entries(spec.headers).map(([name, value]) => `wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`),
  ];
  writeFileSync(script, `${lines.join('\n')}\n${SCRIPT_TAIL}`);
  const seconds = Math.max(2, Math.round(options.durationMs / 1000));
  const [command = wrk, ...args] = [...options.prefix, wrk, '-t1', `-c${options.connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, origin];
  const output = await new Promise<string>((resolve, reject) => {
    execFile(command, args, { timeout: (seconds + 20) * 1000, maxBuffer: 1 << 20 }, (error, stdout) => (error === null ? resolve(stdout) : reject(error)));
  });
  const match = /WRK (\{.*\})/.exec(output);
  if (match?.[1] === undefined) throw new Error(`wrk gave no result: ${output.slice(-300)}`);
  const result = JSON.parse(match[1]) as { requests: number; durationUs: number; non2xx: number; errors: number; quantiles: number[] };
  const failed = result.non2xx + result.errors;
  return {
    sent: result.requests,
    completed: result.requests - result.non2xx,
    errors: failed,
    wallMs: result.durationUs / 1000,
    latencies: result.quantiles,
    firstByte: [],
    reads: [],
    sendLag: [],
    firstFailure: failed > 0 ? `${result.non2xx} non-2xx, ${result.errors} socket errors (wrk)` : undefined,
    unfinished: 0,
  };
}
