import type { Counter, Histogram, LabelValues } from 'prom-client';

// One labelled series of a prom-client metric, updated without prom-client's per-call work.
// A `labels()` child still checks and hashes its label set on every observation (an object,
// a validation loop and a string per call; a request makes six). The series' storage is
// found once, after prom-client created it, and updated in place the way prom-client's own
// observe()/inc() do; a reset() or remove() that replaced the storage is noticed (one
// property read) and the next call goes through prom-client again. Exemplars and values
// prom-client would refuse (NaN, ±Infinity, negative increments) take prom-client's path,
// so they fail the same way. test/proxy/observability/metric-series.test.ts checks the
// exposition against prom-client's own.

interface HistogramEntry {
  labels: Record<string, string | number>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

interface CounterEntry {
  labels: Record<string, string | number>;
  value: number;
}

interface Storage<E> {
  hashMap: Record<string, E>;
  enableExemplars?: boolean;
}

function sameLabels(a: Record<string, string | number>, b: Record<string, string | number>): boolean {
  const keys = Object.keys(b);
  if (Object.keys(a).length !== keys.length) return false;
  for (const key of keys) if (String(a[key]) !== String(b[key])) return false;
  return true;
}

/** The key and entry prom-client keeps for `labels`, once an observation created it. */
function findEntry<E extends { labels: Record<string, string | number> }>(hashMap: Record<string, E>, labels: Record<string, string | number>): [string, E] | undefined {
  for (const key in hashMap) {
    const entry = hashMap[key];
    if (entry !== undefined && (entry.labels === labels || sameLabels(entry.labels, labels))) return [key, entry];
  }
  return undefined;
}

/** observe(value) on the histogram's series for `labels`. */
export function histogramSeries<T extends string>(histogram: Histogram<T>, labels: LabelValues<T>): (value: number) => void {
  const child = histogram.labels(labels);
  const storage = histogram as unknown as Storage<HistogramEntry> & { upperBounds?: number[] };
  const bounds = storage.upperBounds;
  if (storage.enableExemplars === true || typeof storage.hashMap !== 'object' || !Array.isArray(bounds)) return (value) => child.observe(value);
  const plain = labels as Record<string, string | number>;
  // The buckets' property names, made once: a number as a key is converted to one per store.
  const names = bounds.map(String);
  // One element kind for every histogram (token bounds are small integers, others doubles): the
  // scan below is one closure shared by all series, and a mixed array made its loads polymorphic.
  const limits = Float64Array.from(bounds);
  let key = '';
  let entry: HistogramEntry | undefined;
  let calls = 0;
  return (value) => {
    if (entry === undefined || storage.hashMap[key] !== entry || !Number.isFinite(value)) {
      child.observe(value);
      // From the second call on: a series used once (past the caller's cache) costs no scan.
      if (++calls > 1) [key, entry] = findEntry(storage.hashMap, plain) ?? ['', undefined];
      return;
    }
    entry.sum += value;
    entry.count += 1;
    // Values above the last bound count only in +Inf (the count), as in prom-client.
    for (let index = 0; index < limits.length; index++) {
      const bound = limits[index] as number;
      if (value <= bound) {
        const name = names[index] as string;
        entry.bucketValues[name] = (entry.bucketValues[name] ?? 0) + 1;
        break;
      }
    }
  };
}

/** inc(value = 1) on the counter's series for `labels`. */
export function counterSeries<T extends string>(counter: Counter<T>, labels: LabelValues<T>): (value?: number) => void {
  const child = counter.labels(labels);
  const storage = counter as unknown as Storage<CounterEntry>;
  if (storage.enableExemplars === true || typeof storage.hashMap !== 'object') return (value) => child.inc(value);
  const plain = labels as Record<string, string | number>;
  let key = '';
  let entry: CounterEntry | undefined;
  let calls = 0;
  return (value = 1) => {
    if (entry === undefined || storage.hashMap[key] !== entry || !(Number.isFinite(value) && value >= 0)) {
      child.inc(value);
      // From the second call on: a series used once (past the caller's cache) costs no scan.
      if (++calls > 1) [key, entry] = findEntry(storage.hashMap, plain) ?? ['', undefined];
      return;
    }
    entry.value += value;
  };
}
