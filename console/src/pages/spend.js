// Spend & health: cost and tokens over time by a dimension, error rate, latency
// percentiles, cache hit rate and budgets — charts drawn from /v1/analytics/summary, one query per
// time bucket, one after another (BUCKETS queries per refresh; none on a timer).
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import uPlot from 'uplot';
import { api } from '../api.js';
import { fmt } from '../format.js';

const BUCKETS = 12;
const TOP_GROUPS = 6;
const RANGES = [
  { id: '1h', label: 'Last hour', ms: 3_600_000 },
  { id: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { id: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
];
const DIMENSIONS = ['model', 'provider', 'workspace', 'api_key_id', 'metadata'];
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#7f7f7f'];

/** Summable stats of several summary entries (percentiles are not summable: charts show them per bucket). */
function addUp(entries) {
  const sum = { requests: 0, errors: 0, tokens: 0, cost: 0, hits: 0, lookups: 0 };
  for (const entry of entries) {
    sum.requests += entry.requests;
    sum.errors += entry.errors;
    sum.tokens += entry.tokens.total;
    sum.cost += entry.cost.usd;
    sum.hits += entry.cache.hits;
    sum.lookups += entry.cache.lookups;
  }
  return { ...sum, errorRate: sum.requests === 0 ? null : sum.errors / sum.requests, hitRate: sum.lookups === 0 ? null : sum.hits / sum.lookups };
}

// One bucket at a time: the store answers one console query at a time, and the totals are
// added up from the buckets instead of asked for again.
async function loadSeries(rangeMs, groupBy) {
  const to = Date.now();
  const step = rangeMs / BUCKETS;
  const buckets = [];
  for (let index = 0; index < BUCKETS; index++) {
    const from = to - rangeMs + index * step;
    buckets.push(await api('v1/analytics/summary', { query: { from: Math.round(from), to: Math.round(from + step), group_by: groupBy } }));
  }
  const byGroup = new Map();
  for (const bucket of buckets) for (const entry of bucket.data) byGroup.set(entry.group, [...(byGroup.get(entry.group) ?? []), entry]);
  const groups = [...byGroup].map(([group, entries]) => ({ group, ...addUp(entries) })).sort((a, b) => b.requests - a.requests);
  return { buckets, total: addUp(buckets.map((bucket) => bucket.total)), groups, truncated: buckets.some((bucket) => bucket.has_more), times: buckets.map((_, index) => (to - rangeMs + (index + 1) * step) / 1000) };
}

/** One uPlot chart; redrawn when its data changes. */
function Chart({ title, description, times, series, unit }) {
  const box = useRef(null);
  useEffect(() => {
    if (box.current === null) return undefined;
    const width = Math.max(320, Math.min(box.current.clientWidth || 560, 720));
    const plot = new uPlot(
      {
        width,
        height: 220,
        series: [{}, ...series.map((entry, index) => ({ label: entry.label, stroke: COLORS[index % COLORS.length], width: 2, spanGaps: true }))],
        axes: [{}, { size: 72, values: (_self, ticks) => ticks.map((tick) => (unit === 'usd' ? `$${tick}` : unit === 'pct' ? `${Math.round(tick * 100)}%` : String(tick))) }],
        scales: { x: { time: true } },
      },
      [times, ...series.map((entry) => entry.values)],
      box.current,
    );
    return () => plot.destroy();
  }, [times, series, unit]);
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div ref=${box} role="img" aria-label=${`${title}: ${description}`}></div>
  </figure>`;
}

/** Usage-limit policies (budgets) with this period's spend and what is left, from /v1/analytics/budgets. */
function Budgets({ version }) {
  const [budgets, setBudgets] = useState(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    api('v1/analytics/budgets').then(
      (answer) => setBudgets(answer.data),
      (failure) => setError(failure.message),
    );
  }, [version]);
  const amount = (policy, value) => (policy.type === 'cost' ? fmt.usd(value) : `${fmt.int(value)} tokens`);
  return html`<section aria-labelledby="budgets-title">
    <h2 id="budgets-title">Budgets</h2>
    ${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    ${budgets === undefined
      ? html`<p role="status">Loading…</p>`
      : budgets.length === 0
        ? html`<p class="muted">No usage-limit policy applies to this workspace.</p>`
        : html`<table class="budgets">
            <thead><tr><th scope="col">Policy</th><th scope="col">Group</th><th scope="col">Period</th><th scope="col">Spent</th><th scope="col">Remaining</th><th scope="col">Limit</th><th scope="col">Used</th></tr></thead>
            <tbody>
              ${budgets.flatMap((policy) =>
                (policy.groups.length === 0 ? [{ group: '—', spent: 0, reserved: 0, remaining: policy.credit_limit }] : policy.groups).map(
                  (group) => html`<tr>
                    <th scope="row">${policy.name ?? policy.policy_id}${policy.error === undefined ? null : html` <span class="error">(${policy.error})</span>`}</th>
                    <td><code>${group.group}</code></td><td>${policy.periodic_reset === 'never' ? 'no reset' : `${policy.periodic_reset} (${policy.period})`}</td>
                    <td class="num">${amount(policy, group.spent)}</td><td class="num">${amount(policy, group.remaining)}</td><td class="num">${amount(policy, policy.credit_limit)}</td>
                    <td><meter min="0" max=${policy.credit_limit} high=${policy.alert_threshold ?? policy.credit_limit * 0.8} value=${group.spent + group.reserved} aria-label=${`${policy.name ?? policy.policy_id} ${group.group}: used of the limit`}></meter></td>
                  </tr>`,
                ),
              )}
            </tbody>
          </table>`}
  </section>`;
}

export function SpendPage() {
  const [range, setRange] = useState('24h');
  const [dimension, setDimension] = useState('model');
  const [metadataKey, setMetadataKey] = useState('');
  const [data, setData] = useState(undefined);
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0);

  const groupBy = dimension === 'metadata' ? (metadataKey.trim() === '' ? undefined : `metadata.${metadataKey.trim()}`) : dimension;
  useEffect(() => {
    let current = true;
    const rangeMs = RANGES.find((entry) => entry.id === range)?.ms ?? 86_400_000;
    loadSeries(rangeMs, groupBy).then(
      (loaded) => current && (setData(loaded), setError('')),
      (failure) => current && setError(failure.message),
    );
    return () => {
      current = false;
    };
  }, [range, groupBy, version]);

  const groups = data === undefined ? [] : data.groups.slice(0, TOP_GROUPS).map((entry) => entry.group);
  const perGroup = (pick) =>
    groups.map((group) => ({
      label: group ?? '(none)',
      values: data.buckets.map((bucket) => {
        const found = bucket.data.find((entry) => entry.group === group);
        return found === undefined ? 0 : pick(found);
      }),
    }));
  const totals = (label, pick) => ({ label, values: data.buckets.map((bucket) => (bucket.total.requests === 0 ? null : pick(bucket.total))) });

  return html`<form class="filters" onSubmit=${(event) => (event.preventDefault(), setVersion(version + 1))}>
      <div class="field">
        <label for="spend-range">Range</label>
        <select id="spend-range" value=${range} onChange=${(event) => setRange(event.currentTarget.value)}>
          ${RANGES.map((entry) => html`<option value=${entry.id}>${entry.label}</option>`)}
        </select>
      </div>
      <div class="field">
        <label for="spend-group">Group by</label>
        <select id="spend-group" value=${dimension} onChange=${(event) => setDimension(event.currentTarget.value)}>
          ${DIMENSIONS.map((entry) => html`<option value=${entry}>${entry === 'api_key_id' ? 'API key' : entry}</option>`)}
        </select>
      </div>
      ${dimension === 'metadata'
        ? html`<div class="field">
            <label for="spend-metadata">Metadata key</label>
            <input id="spend-metadata" value=${metadataKey} onInput=${(event) => setMetadataKey(event.currentTarget.value)} />
          </div>`
        : null}
      <div class="actions"><button type="submit">Refresh</button></div>
    </form>
    ${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    ${data === undefined
      ? html`<p role="status">Loading…</p>`
      : html`<div class="cards" role="list" aria-label="Totals for the range">
            <div class="card" role="listitem"><span>Requests</span><strong>${fmt.int(data.total.requests)}</strong></div>
            <div class="card" role="listitem"><span>Cost</span><strong>${fmt.usd(data.total.cost)}</strong></div>
            <div class="card" role="listitem"><span>Tokens</span><strong>${fmt.int(data.total.tokens)}</strong></div>
            <div class="card" role="listitem"><span>Error rate</span><strong>${fmt.pct(data.total.errorRate)}</strong></div>
            <div class="card" role="listitem"><span>Cache hit rate</span><strong>${fmt.pct(data.total.hitRate)}</strong></div>
          </div>
          <div class="charts">
            <${Chart} title=${`Cost (USD) by ${dimension}`} description="cost per time bucket" times=${data.times} series=${perGroup((entry) => entry.cost.usd)} unit="usd" />
            <${Chart} title=${`Tokens by ${dimension}`} description="tokens per time bucket" times=${data.times} series=${perGroup((entry) => entry.tokens.total)} />
            <${Chart} title="Requests and errors" description="requests and errors per time bucket" times=${data.times} series=${[totals('requests', (total) => total.requests), totals('errors', (total) => total.errors)]} />
            <${Chart} title="Latency (ms)" description="p50 and p95 per time bucket" times=${data.times} series=${[totals('p50', (total) => total.latency_ms.p50), totals('p95', (total) => total.latency_ms.p95)]} />
            <${Chart} title="Error rate and cache hit rate" description="rates per time bucket" times=${data.times} series=${[totals('error rate', (total) => total.error_rate), totals('cache hit rate', (total) => total.cache.hit_rate)]} unit="pct" />
          </div>
          <table class="groups">
            <caption>By ${dimension} over the range${data.truncated ? ' (the largest groups of each bucket)' : ''}</caption>
            <thead><tr><th scope="col">${dimension}</th><th scope="col">Requests</th><th scope="col">Errors</th><th scope="col">Error rate</th><th scope="col">Tokens</th><th scope="col">Cost</th><th scope="col">Cache hit rate</th></tr></thead>
            <tbody>
              ${data.groups.map(
                (entry) => html`<tr>
                  <th scope="row">${entry.group ?? '(none)'}</th><td class="num">${fmt.int(entry.requests)}</td><td class="num">${fmt.int(entry.errors)}</td>
                  <td class="num">${fmt.pct(entry.errorRate)}</td><td class="num">${fmt.int(entry.tokens)}</td><td class="num">${fmt.usd(entry.cost)}</td><td class="num">${fmt.pct(entry.hitRate)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`}
    <${Budgets} version=${version} />`;
}
