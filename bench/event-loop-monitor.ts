import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

// A preload for finding latency stalls in a gateway under load: once a second, one line on
// stderr with the event loop's worst delay and p99 in that second, and every GC pause of
// 2 ms or more (kind: 1 scavenge, 2 mark-compact, 4 incremental marking, 8 weak callbacks).
// A stall with no GC beside it is synchronous work (or, on a shared machine, the process
// waiting for its core: run the bare proxy with the same preload to tell them apart).
//   node --import ./bench/event-loop-monitor.ts bin/aigateway.js serve …
//   BENCH_AIGW_CMD='NODE_OPTIONS="--max-semi-space-size=16 --import ./bench/event-loop-monitor.ts" node bin/aigateway.js serve
//     --config "$BENCH_CONFIG" --port "$PORT" --host 127.0.0.1 --data-dir "$BENCH_DATA_DIR"' ../shared/tools/bench-side-by-side/run

if (isMainThread) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let pauses: [number, number][] = [];
  let gcMs = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMs += entry.duration;
      if (entry.duration >= 2) pauses.push([((entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0), Math.round(entry.duration * 100) / 100]);
    }
  }).observe({ entryTypes: ['gc'] });
  const started = Date.now();
  setInterval(() => {
    const second = Math.round((Date.now() - started) / 1000);
    process.stderr.write(
      `event-loop ${second}s: delay max ${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms; gc ${gcMs.toFixed(1)} ms, pauses ≥ 2 ms [kind, ms]: ${JSON.stringify(pauses)}\n`,
    );
    delay.reset();
    pauses = [];
    gcMs = 0;
  }, 1000).unref();
}
