import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { counterSeries, histogramSeries } from '../../../proxy/observability/metric-series.ts';

// The fast series must leave prom-client's exposition exactly as its own observe()/inc() would.

function twins(): { fast: Registry; slow: Registry; fastH: Histogram<'route' | 'k'>; slowH: Histogram<'route' | 'k'>; fastC: Counter<'route'>; slowC: Counter<'route'> } {
  const make = (registry: Registry) => ({
    h: new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['route', 'k'] as const, buckets: [0.1, 1, 10], registers: [registry] }),
    c: new Counter({ name: 'c_total', help: 'c', labelNames: ['route'] as const, registers: [registry] }),
  });
  const fast = new Registry();
  const slow = new Registry();
  const f = make(fast);
  const s = make(slow);
  return { fast, slow, fastH: f.h, slowH: s.h, fastC: f.c, slowC: s.c };
}

test('histogram and counter series expose what prom-client itself would', async () => {
  const t = twins();
  const observe = histogramSeries(t.fastH, { route: '/v1/chat', k: 'a' });
  const other = histogramSeries(t.fastH, { route: '/v1/chat', k: 'b' });
  const inc = counterSeries(t.fastC, { route: '/v1/chat' });
  const values = [0.05, 0.1, 0.5, 1, 3, 10, 11, 1e9, 0];
  for (const value of values) {
    observe(value);
    t.slowH.labels({ route: '/v1/chat', k: 'a' }).observe(value);
    inc();
    t.slowC.labels({ route: '/v1/chat' }).inc();
  }
  other(2);
  t.slowH.labels({ route: '/v1/chat', k: 'b' }).observe(2);
  inc(2.5);
  t.slowC.labels({ route: '/v1/chat' }).inc(2.5);
  assert.equal(await t.fast.metrics(), await t.slow.metrics());
});

test('a reset or removed series is noticed and counted again from zero', async () => {
  const t = twins();
  const observe = histogramSeries(t.fastH, { route: 'r', k: 'a' });
  const inc = counterSeries(t.fastC, { route: 'r' });
  for (let i = 0; i < 3; i++) {
    observe(0.5);
    inc();
  }
  t.fastH.reset();
  t.fastC.remove({ route: 'r' });
  observe(5);
  observe(0.05);
  inc();
  t.slowH.labels({ route: 'r', k: 'a' }).observe(5);
  t.slowH.labels({ route: 'r', k: 'a' }).observe(0.05);
  t.slowC.labels({ route: 'r' }).inc();
  assert.equal(await t.fast.metrics(), await t.slow.metrics());
});

test('values prom-client refuses are refused the same way', () => {
  const t = twins();
  const observe = histogramSeries(t.fastH, { route: 'r', k: 'a' });
  const inc = counterSeries(t.fastC, { route: 'r' });
  observe(1);
  observe(1);
  inc();
  inc();
  assert.throws(() => observe(Number.NaN), /not a valid number/);
  assert.throws(() => inc(-1), /not possible to decrease/);
  assert.throws(() => inc(Number.POSITIVE_INFINITY), /not a valid number/);
});

// The bounds are scanned as doubles (one element kind for all series): integer bounds, tiny
// ones and values on, just under and just over each bound still land in prom-client's buckets.
test('integer and fractional bounds: every value lands in the bucket prom-client picks', async () => {
  const registries = [new Registry(), new Registry()];
  const [fastTokens, fastTiny, slowTokens, slowTiny] = registries.flatMap((registry, index) => [
    new Histogram({ name: `tokens_${index}`, help: 't', labelNames: ['k'] as const, buckets: [1, 4, 16, 64], registers: [registry] }),
    new Histogram({ name: `tiny_${index}`, help: 't', labelNames: ['k'] as const, buckets: [0.00005, 0.0001, 0.00025, 0.5], registers: [registry] }),
  ]) as [Histogram<'k'>, Histogram<'k'>, Histogram<'k'>, Histogram<'k'>];
  const tokens = histogramSeries(fastTokens, { k: 'a' });
  const tiny = histogramSeries(fastTiny, { k: 'a' });
  for (const bound of [1, 4, 16, 64, 0.00005, 0.0001, 0.00025, 0.5]) {
    for (const value of [bound, bound * (1 - Number.EPSILON), bound * (1 + Number.EPSILON), -0, 0, 2 ** 40]) {
      tokens(value);
      slowTokens.labels({ k: 'a' }).observe(value);
      tiny(value);
      slowTiny.labels({ k: 'a' }).observe(value);
    }
  }
  const [fast, slow] = await Promise.all(registries.map((registry) => registry.metrics()));
  assert.equal(fast?.replaceAll('_0', '_N'), slow?.replaceAll('_1', '_N'));
});
