import { performance } from 'node:perf_hooks';
import { Pool, type Dispatcher } from 'undici';

// The load generator, on undici's low-level dispatch (no Readable per response, so the
// generator stays cheap next to the mock on its shared core).
//   open loop:   requests are sent on a fixed schedule whatever the target does, and
//                latency counts from the *scheduled* send time — a target that falls
//                behind shows it as latency instead of silently getting fewer requests;
//   closed loop: N workers, each sends its next request when the previous one ends
//                (max throughput);
//   streams:     open loop; time to the first body byte, and how many reads it arrived in.

/** What to send; the same bytes every time. */
export interface RequestSpec {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export interface Outcome {
  readonly ok: boolean;
  readonly status: number;
  /** performance.now() of the first body byte (NaN when none). */
  readonly firstByteAt: number;
  readonly doneAt: number;
  /** Body reads: a streaming relay delivers many, a buffering one one or two. */
  readonly reads: number;
  /** Why it failed: `HTTP <status>` or undici's error code. */
  readonly failure: string | undefined;
}

/** Latencies (ms) and counts of one measured segment. */
export interface SegmentResult {
  readonly sent: number;
  readonly completed: number;
  readonly errors: number;
  readonly wallMs: number;
  /** Full-response latency from the scheduled (open) or actual (closed) send time. */
  readonly latencies: number[];
  /** Time to first body byte, same origin. */
  readonly firstByte: number[];
  /** Body reads per response. */
  readonly reads: number[];
  /** How late the generator sent relative to schedule (open loop only). */
  readonly sendLag: number[];
  /** The first failure seen, for the progress log. */
  readonly firstFailure: string | undefined;
  /** Requests still in flight when the segment gave up on them (the pool should be replaced). */
  readonly unfinished: number;
}

export const REQUEST_TIMEOUT_MS = 5_000;

export function createLoadPool(origin: string, connections: number): Pool {
  return new Pool(origin, {
    connections,
    pipelining: 1,
    // Below Node's default server keep-alive (5 s): the peer closes idle sockets then without
    // a Keep-Alive hint, and reusing one as it closes would count as an ECONNRESET.
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 4_000,
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
  });
}

/** Sends one request and resolves when its body has ended (never rejects). */
export function send(pool: Dispatcher, spec: RequestSpec): Promise<Outcome> {
  return new Promise((resolve) => {
    let status = 0;
    let firstByteAt = Number.NaN;
    let reads = 0;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {
        // required by undici's handler check; nothing to do
      },
      onResponseStart(_controller, statusCode) {
        status = statusCode;
      },
      onResponseData() {
        if (reads++ === 0) firstByteAt = performance.now();
      },
      onResponseEnd() {
        const ok = status >= 200 && status < 300;
        resolve({ ok, status, firstByteAt, doneAt: performance.now(), reads, failure: ok ? undefined : `HTTP ${status}` });
      },
      onResponseError(_controller, error) {
        const code = (error as { code?: string }).code ?? error.message;
        resolve({ ok: false, status, firstByteAt, doneAt: performance.now(), reads, failure: code });
      },
    };
    pool.dispatch({ path: spec.path, method: 'POST', headers: spec.headers, body: spec.body }, handler);
  });
}

function emptyResult(): { latencies: number[]; firstByte: number[]; reads: number[]; sendLag: number[]; firstFailure: string | undefined } {
  return { latencies: [], firstByte: [], reads: [], sendLag: [], firstFailure: undefined };
}

export interface OpenLoopOptions {
  readonly rate: number;
  readonly durationMs: number;
  /** How long to wait for stragglers after the last scheduled send. */
  readonly drainMs: number;
}

/** Fixed-rate run: request i is due at start + i / rate, and its latency counts from then. */
export async function runOpenLoop(pool: Dispatcher, spec: RequestSpec, options: OpenLoopOptions): Promise<SegmentResult> {
  const result = emptyResult();
  const total = Math.round((options.rate * options.durationMs) / 1000);
  const intervalMs = 1000 / options.rate;
  const inFlight = new Set<Promise<void>>();
  let completed = 0;
  let errors = 0;
  let sent = 0;
  let measuring = true;
  const start = performance.now();

  const fire = (scheduledAt: number): void => {
    result.sendLag.push(performance.now() - scheduledAt);
    const done = send(pool, spec).then((outcome) => {
      inFlight.delete(done);
      if (!measuring) return; // a straggler past the drain deadline, already counted as an error
      if (!outcome.ok) {
        errors++;
        result.firstFailure ??= outcome.failure;
        return;
      }
      completed++;
      result.latencies.push(outcome.doneAt - scheduledAt);
      result.firstByte.push(outcome.firstByteAt - scheduledAt);
      result.reads.push(outcome.reads);
    });
    inFlight.add(done);
  };

  // Node timers fire at ~1 ms granularity: each tick sends every request already due.
  // A busy loop would be more punctual but would steal the mock's core.
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (sent < total && start + sent * intervalMs <= now) fire(start + sent++ * intervalMs);
      if (sent >= total) resolve();
      else setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    tick();
  });
  await settle(inFlight, options.drainMs);
  measuring = false;
  if (inFlight.size > 0) result.firstFailure ??= `${inFlight.size} unfinished after ${options.drainMs} ms`;
  return { sent, completed, errors: errors + inFlight.size, wallMs: performance.now() - start, unfinished: inFlight.size, ...result };
}

export interface ClosedLoopOptions {
  readonly connections: number;
  readonly durationMs: number;
}

/** Max-throughput run: `connections` workers, each one request at a time, until the deadline. */
export async function runClosedLoop(pool: Dispatcher, spec: RequestSpec, options: ClosedLoopOptions): Promise<SegmentResult> {
  const result = emptyResult();
  let completed = 0;
  let errors = 0;
  let sent = 0;
  const start = performance.now();
  const deadline = start + options.durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const sentAt = performance.now();
      sent++;
      const outcome = await send(pool, spec);
      if (!outcome.ok) {
        errors++;
        result.firstFailure ??= outcome.failure;
        // A failing target answers fast; do not spin on it.
        await new Promise((resolve) => setTimeout(resolve, 1));
        continue;
      }
      completed++;
      result.latencies.push(outcome.doneAt - sentAt);
      result.firstByte.push(outcome.firstByteAt - sentAt);
      result.reads.push(outcome.reads);
    }
  };
  await Promise.all(Array.from({ length: options.connections }, worker));
  return { sent, completed, errors, wallMs: performance.now() - start, unfinished: 0, ...result };
}

async function settle(inFlight: Set<Promise<void>>, drainMs: number): Promise<void> {
  if (inFlight.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, drainMs);
  });
  await Promise.race([Promise.all(inFlight), deadline]);
  clearTimeout(timer);
}

/** Nearest-rank percentile of `values` (need not be sorted); NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}
