// The default metrics' event-loop lag histogram samples on a timer of its own. prom-client's
// 10 ms woke an idle gateway 100 times a second (≈ 9 ms of CPU a second), so its idle memory
// release never saw an idle loop; the gateway asks for 100 ms.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { createGatewayMetrics } from '../../../proxy/observability/gateway-metrics.ts';

// The module object prom-client reads the function from when it sets the histogram up.
const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as typeof import('node:perf_hooks');

test('the event-loop lag histogram samples every 100 ms, and its series are still served', async (t) => {
  const monitor = t.mock.method(perfHooks, 'monitorEventLoopDelay');
  const metrics = createGatewayMetrics();
  assert.deepEqual(
    monitor.mock.calls.map((call) => call.arguments[0]?.resolution),
    [100],
  );
  const text = await metrics.registry.metrics();
  assert.match(text, /^aigateway_nodejs_eventloop_lag_p99_seconds /m);
});
