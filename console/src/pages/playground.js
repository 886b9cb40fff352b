// Playground: a model from /v1/models, optionally through a saved config, one chat message,
// the answer streamed as it arrives, then the route it took and its cost from the request log.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api, apiHeaders, apiUrl } from '../api.js';
import { fmt, statusClass } from '../format.js';

const MAX_ANSWER_CHARS = 200_000;

/** Yields the `data:` payloads of an SSE body. */
async function* sseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data !== '') yield data;
    }
  }
}

/** The log record of a trace id, once the log writer has stored it. */
async function logOf(traceId) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const page = await api('v1/logs', { query: { trace_id: traceId, limit: 1 } });
    if (page.data.length > 0) return page.data[0];
    await new Promise((resolve) => window.setTimeout(resolve, 250 * (attempt + 1)));
  }
  return undefined;
}

export function PlaygroundPage({ configuration }) {
  const [models, setModels] = useState([]);
  const [model, setModel] = useState('');
  const [config, setConfig] = useState('');
  const [message, setMessage] = useState('');
  const [answer, setAnswer] = useState('');
  const [state, setState] = useState('idle');
  const [error, setError] = useState('');
  const [record, setRecord] = useState(undefined);
  const abort = useRef(undefined);

  useEffect(() => {
    api('v1/models').then(
      (list) => {
        const ids = list.data.map((model) => model.id).slice(0, 500);
        setModels(ids);
        if (ids.length > 0) setModel((current) => current || ids[0]);
      },
      (failure) => setError(failure.message),
    );
    return () => abort.current?.abort();
  }, []);

  const send = async (event) => {
    event.preventDefault();
    if (model === '' || message.trim() === '') return;
    const traceId = `console-${crypto.randomUUID()}`;
    const headers = { 'content-type': 'application/json', 'x-gateway-trace-id': traceId };
    // Through a saved config the model is still sent: the config's override_params may replace it.
    if (config !== '') headers['x-gateway-config'] = config;
    const body = { model, messages: [{ role: 'user', content: message }], stream: true, stream_options: { include_usage: true } };
    setAnswer('');
    setError('');
    setRecord(undefined);
    setState('streaming');
    abort.current = new AbortController();
    try {
      const response = await fetch(apiUrl('v1/chat/completions'), {
        method: 'POST',
        headers: apiHeaders(headers),
        body: JSON.stringify(body),
        signal: abort.current.signal,
        cache: 'no-store',
        credentials: 'omit',
      });
      if (!response.ok || response.body === null) {
        const json = await response.json().catch(() => null);
        throw new Error(json?.error?.message ?? `HTTP ${response.status}`);
      }
      let text = '';
      for await (const data of sseData(response.body)) {
        if (data === '[DONE]') break;
        let chunk;
        try {
          chunk = JSON.parse(data);
        } catch {
          continue;
        }
        if (chunk.error !== undefined) throw new Error(chunk.error.message ?? 'the stream ended with an error');
        const delta = chunk.choices?.[0]?.delta?.content;
        if (typeof delta === 'string' && text.length < MAX_ANSWER_CHARS) {
          text += delta;
          setAnswer(text);
        }
      }
      setState('logging');
    } catch (failure) {
      setError(failure.name === 'AbortError' ? 'Stopped.' : failure.message);
      setState('logging');
    }
    try {
      setRecord((await logOf(traceId)) ?? null);
    } catch (failure) {
      setError(failure.message);
    }
    setState('idle');
  };

  return html`<form class="playground" onSubmit=${send}>
      <div class="field">
        <label for="pg-model">Model</label>
        <select id="pg-model" value=${model} onChange=${(event) => setModel(event.currentTarget.value)}>
          ${models.map((id) => html`<option value=${id}>${id}</option>`)}
        </select>
      </div>
      <div class="field">
        <label for="pg-config">Saved config</label>
        <select id="pg-config" value=${config} onChange=${(event) => setConfig(event.currentTarget.value)}>
          <option value="">none: route by the model</option>
          ${configuration.configs.map((saved) => html`<option value=${saved.id}>${saved.id}</option>`)}
        </select>
      </div>
      <div class="field wide">
        <label for="pg-message">Message</label>
        <textarea id="pg-message" rows="4" value=${message} onInput=${(event) => setMessage(event.currentTarget.value)}></textarea>
      </div>
      <div class="actions">
        <button type="submit" disabled=${state !== 'idle'}>Send</button>
        ${state === 'streaming' ? html`<button type="button" class="secondary" onClick=${() => abort.current?.abort()}>Stop</button>` : null}
      </div>
    </form>
    ${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    <section aria-labelledby="pg-answer-title">
      <h2 id="pg-answer-title">Answer</h2>
      <output class="answer" aria-live="polite" data-testid="answer">${answer}</output>
    </section>
    <section aria-labelledby="pg-route-title">
      <h2 id="pg-route-title">Route and cost</h2>
      ${state === 'logging'
        ? html`<p role="status">Waiting for the request log…</p>`
        : record === undefined
          ? html`<p class="muted">Send a message to see the route it took.</p>`
          : record === null
            ? html`<p class="muted">No log record yet (is the request log store on?).</p>`
            : html`<dl class="facts" data-testid="route">
                <dt>Status</dt><dd><span class=${statusClass(record.status)}>${record.status}</span></dd>
                <dt>Provider</dt><dd>${fmt.text(record.provider)}</dd>
                <dt>Model served</dt><dd>${fmt.text(record.model)}</dd>
                <dt>Config</dt><dd>${fmt.text(record.config_id)} ${record.target_path === null ? '' : html`<code>${record.target_path}</code>`}</dd>
                <dt>Attempts</dt><dd>${record.attempts.map((attempt) => `${attempt.target} → ${attempt.skipped ?? attempt.status}`).join(', ') || '—'}</dd>
                <dt>Tokens</dt><dd>${fmt.int(record.usage.prompt_tokens)} in, ${fmt.int(record.usage.completion_tokens)} out</dd>
                <dt>Cost</dt><dd data-testid="cost">${fmt.usd(record.cost_usd)}</dd>
                <dt>Latency</dt><dd>${fmt.ms(record.latency_ms)}</dd>
                <dt>Trace id</dt><dd><code>${record.trace_id}</code></dd>
              </dl>`}
    </section>`;
}
