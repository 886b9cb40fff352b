// Requests: the request log, newest first, live-updating, with filters and a detail view.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from '../api.js';
import { fmt, statusClass } from '../format.js';

// The gateway caps a page at 100; the console asks for 50 and polls only while visible.
const PAGE_SIZE = 50;
const POLL_MS = 3_000;
// Without a From, the last week: a filter that matches little never scans the whole log.
const DEFAULT_RANGE_MS = 7 * 86_400_000;
const EMPTY_FILTERS = { trace_id: '', status: '', model: '', api_key_id: '', metadata: '', from: '', to: '' };

/** The form's filters as /v1/logs query parameters. */
function queryOf(filters) {
  const query = {};
  for (const name of ['trace_id', 'status', 'model', 'api_key_id']) if (filters[name].trim() !== '') query[name] = filters[name].trim();
  for (const name of ['from', 'to']) if (filters[name] !== '') query[name] = new Date(filters[name]).toISOString();
  query.from ??= new Date(Date.now() - DEFAULT_RANGE_MS).toISOString();
  // metadata: `key=value`, several separated by commas.
  for (const pair of filters.metadata.split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) query[`metadata.${pair.slice(0, at).trim()}`] = pair.slice(at + 1).trim();
  }
  return query;
}

export function RequestsPage({ configuration }) {
  const [draft, setDraft] = useState(EMPTY_FILTERS);
  const [filters, setFilters] = useState(EMPTY_FILTERS);
  const [rows, setRows] = useState([]);
  const [hasMore, setHasMore] = useState(false);
  const [live, setLive] = useState(true);
  const [error, setError] = useState('');
  const [selected, setSelected] = useState(undefined);
  const [loaded, setLoaded] = useState(false);
  const inFlight = useRef(false);

  const refresh = useCallback(async () => {
    if (inFlight.current) return; // one query at a time, however slow the store
    inFlight.current = true;
    try {
      const page = await api('v1/logs', { query: { ...queryOf(filters), limit: PAGE_SIZE } });
      setRows(page.data);
      setHasMore(page.has_more);
      setError('');
    } catch (failure) {
      setError(failure.message);
    } finally {
      inFlight.current = false;
      setLoaded(true);
    }
  }, [filters]);

  useEffect(() => {
    void refresh();
    if (!live) return undefined;
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, POLL_MS);
    return () => window.clearInterval(timer);
  }, [refresh, live]);

  const more = async () => {
    try {
      const page = await api('v1/logs', { query: { ...queryOf(filters), limit: PAGE_SIZE, after: rows.at(-1)?.id } });
      setRows([...rows, ...page.data]);
      setHasMore(page.has_more);
      setLive(false); // a longer list would be cut back by the next refresh
    } catch (failure) {
      setError(failure.message);
    }
  };

  const field = (name, label, props = {}) => html`<div class="field">
    <label for=${`filter-${name}`}>${label}</label>
    <input id=${`filter-${name}`} name=${name} value=${draft[name]} onInput=${(event) => setDraft({ ...draft, [name]: event.currentTarget.value })} ...${props} />
  </div>`;

  return html`<section aria-labelledby="requests-filters">
      <h2 id="requests-filters" class="visually-hidden">Filters</h2>
      <form
        class="filters"
        onSubmit=${(event) => {
          event.preventDefault();
          setSelected(undefined);
          setFilters(draft);
        }}
      >
        ${field('trace_id', 'Trace id')} ${field('status', 'Status', { placeholder: '200, 4xx, 5xx' })} ${field('model', 'Model')}
        ${field('api_key_id', 'API key id')} ${field('metadata', 'Metadata', { placeholder: 'team=search' })}
        ${field('from', 'From', { type: 'datetime-local' })} ${field('to', 'To', { type: 'datetime-local' })}
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button
            type="button"
            class="secondary"
            onClick=${() => {
              setDraft(EMPTY_FILTERS);
              setFilters(EMPTY_FILTERS);
            }}
          >
            Clear
          </button>
          <label class="inline"><input type="checkbox" checked=${live} onChange=${(event) => setLive(event.currentTarget.checked)} /> Live</label>
        </div>
      </form>
    </section>
    ${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    <p role="status" class="count">${loaded ? `${rows.length} request${rows.length === 1 ? '' : 's'}${hasMore ? ' (more below)' : ''}` : 'Loading…'}</p>
    <div class="table-wrap">
      <table class="requests">
        <caption class="visually-hidden">Recent requests, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th><th scope="col">Status</th><th scope="col">Model (asked → served)</th><th scope="col">Provider</th>
            <th scope="col">Config</th><th scope="col">Latency</th><th scope="col">Tokens</th><th scope="col">Cost</th><th scope="col">Cache</th><th scope="col">Trace id</th>
          </tr>
        </thead>
        <tbody>
          ${rows.map(
            (row) => html`<tr key=${row.id} class=${selected === row.id ? 'selected' : ''}>
              <td>${fmt.time(row.started_at)}</td>
              <td><span class=${statusClass(row.status)}>${row.status}</span></td>
              <td>${fmt.text(row.model_requested)}${row.model !== null && row.model !== row.model_requested ? html` → ${row.model}` : null}</td>
              <td>${fmt.text(row.provider)}</td>
              <td>${fmt.text(row.config_id)}</td>
              <td class="num">${fmt.ms(row.latency_ms)}</td>
              <td class="num">${fmt.int(row.usage?.total_tokens)}</td>
              <td class="num">${fmt.usd(row.cost_usd)}</td>
              <td>${fmt.text(row.cache_status)}</td>
              <td><button type="button" class="link" data-log-id=${row.id} aria-label=${`Details of request ${row.trace_id}`} onClick=${() => setSelected(row.id)}>${row.trace_id}</button></td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
    ${hasMore ? html`<button type="button" class="secondary" onClick=${more}>Load more</button>` : null}
    ${selected === undefined
      ? null
      : html`<${RequestDetail}
          id=${selected}
          bodies=${configuration?.request_log?.bodies === true}
          onClose=${() => {
            // Keyboard focus goes back to the row the detail was opened from.
            const opener = document.querySelector(`button[data-log-id="${CSS.escape(selected)}"]`);
            setSelected(undefined);
            opener?.focus();
          }}
        />`}`;
}

/** Header name → value (credentials already redacted by the gateway). */
function HeaderTable({ caption, headers }) {
  const names = Object.keys(headers ?? {});
  return html`<table class="headers">
    <caption>${caption}</caption>
    <thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead>
    <tbody>${names.map((name) => html`<tr><th scope="row"><code>${name}</code></th><td><code>${headers[name]}</code></td></tr>`)}</tbody>
  </table>`;
}

function Body({ title, body }) {
  if (body === null || body === undefined) return html`<h4>${title}</h4><p class="muted">No body.</p>`;
  return html`<h4>${title} <span class="muted">(${fmt.int(body.bytes)} bytes${body.truncated ? `, the first ${fmt.int(new Blob([body.text]).size)} shown` : ''})</span></h4>
    <pre class="payload" tabindex="0" aria-label=${title}>${body.text}</pre>`;
}

/** Headers and bodies, when the gateway keeps them (serve --log-bodies). */
function Exchange({ exchange }) {
  if (exchange === undefined) return html`<p role="status">Loading headers and bodies…</p>`;
  if (exchange === null) return html`<p class="hint">No headers or bodies were kept for this request.</p>`;
  return html`<div class="exchange" data-testid="exchange">
    <div class="two">
      <${HeaderTable} caption="Request headers" headers=${exchange.request.headers} />
      <${HeaderTable} caption="Response headers" headers=${exchange.response.headers} />
    </div>
    <${Body} title="Request body" body=${exchange.request.body} />
    <${Body} title="Response body" body=${exchange.response.body} />
  </div>`;
}

function RequestDetail({ id, bodies, onClose }) {
  const [entry, setEntry] = useState(undefined);
  const [exchange, setExchange] = useState(undefined);
  const [error, setError] = useState('');
  const panel = useRef(null);
  useEffect(() => {
    setEntry(undefined);
    setExchange(undefined);
    api(`v1/logs/${encodeURIComponent(id)}`).then(setEntry, (failure) => setError(failure.message));
    // Asked only when the gateway keeps them; a record written before they were on has none (404).
    if (bodies) api(`v1/logs/${encodeURIComponent(id)}/exchange`).then(setExchange, (failure) => (failure.status === 404 ? setExchange(null) : setError(failure.message)));
  }, [id, bodies]);
  useEffect(() => panel.current?.focus(), [entry]);
  const onKey = (event) => {
    if (event.key === 'Escape') onClose();
  };
  return html`<section class="detail" aria-labelledby="detail-title" tabindex="-1" ref=${panel} onKeyDown=${onKey}>
    <div class="detail-head">
      <h2 id="detail-title">Request ${entry?.trace_id ?? ''}</h2>
      <button type="button" class="secondary" onClick=${onClose}>Close</button>
    </div>
    ${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    ${entry === undefined
      ? html`<p role="status">Loading…</p>`
      : html`<dl class="facts">
            <dt>Started</dt><dd>${fmt.dateTime(entry.started_at)}</dd>
            <dt>Route</dt><dd><code>${entry.method} ${entry.route}</code></dd>
            <dt>Status</dt><dd><span class=${statusClass(entry.status)}>${entry.status}</span> ${entry.error_code ?? ''}</dd>
            <dt>Model asked</dt><dd>${fmt.text(entry.model_requested)}</dd>
            <dt>Model served</dt><dd>${fmt.text(entry.model)}</dd>
            <dt>Provider</dt><dd>${fmt.text(entry.provider)}</dd>
            <dt>Config</dt><dd>${fmt.text(entry.config_id)} ${entry.target_path === null ? '' : html`<code>${entry.target_path}</code>`}</dd>
            <dt>API key</dt><dd>${fmt.text(entry.api_key_id)} (workspace ${fmt.text(entry.workspace)})</dd>
            <dt>Latency</dt><dd>${fmt.ms(entry.latency_ms)} (first byte ${fmt.ms(entry.ttft_ms)})</dd>
            <dt>Tokens</dt><dd>${fmt.int(entry.usage.prompt_tokens)} in, ${fmt.int(entry.usage.completion_tokens)} out${entry.usage.estimated ? ' (estimated)' : ''}</dd>
            <dt>Cost</dt><dd>${fmt.usd(entry.cost_usd)}</dd>
            <dt>Cache</dt><dd>${fmt.text(entry.cache_status)}</dd>
            <dt>Guardrails</dt><dd>${fmt.text(entry.guardrail_verdict)}</dd>
            <dt>Retries</dt><dd>${fmt.int(entry.retries)}</dd>
            <dt>Trace</dt><dd><code>${entry.trace_id}</code>${entry.otel_trace_id === null ? '' : html` · OpenTelemetry <code>${entry.otel_trace_id}</code>`}</dd>
            <dt>Metadata</dt><dd><code>${JSON.stringify(entry.metadata)}</code></dd>
          </dl>
          <h3>Attempts</h3>
          ${entry.attempts.length === 0
            ? html`<p>No upstream attempt (answered by the gateway or its cache).</p>`
            : html`<table class="attempts">
                <thead><tr><th scope="col">#</th><th scope="col">Target</th><th scope="col">Provider</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Outcome</th></tr></thead>
                <tbody>
                  ${entry.attempts.map(
                    (attempt, index) => html`<tr>
                      <td>${index + 1}</td><td><code>${attempt.target}</code></td><td>${fmt.text(attempt.provider)}</td><td>${fmt.text(attempt.model)}</td>
                      <td>${attempt.status === null ? '—' : html`<span class=${statusClass(attempt.status)}>${attempt.status}</span>`}</td>
                      <td class="num">${fmt.ms(attempt.duration_ms)}</td>
                      <td>${attempt.skipped === undefined ? fmt.text(attempt.error_code ?? 'ok') : `skipped (${attempt.skipped.replace('_', ' ')})`}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>`}
          <h3>Headers and bodies</h3>
          ${bodies
            ? html`<${Exchange} exchange=${exchange} />`
            : html`<p class="hint">This gateway keeps no headers and no bodies (serve --log-bodies turns them on); the metadata header is shown above.</p>`}`}
  </section>`;
}
