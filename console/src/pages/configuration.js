// Configuration, read-only: GET /v1/configuration (providers without keys, saved configs
// drawn as routing trees with breaker states, catalog, guardrails, prompts, MCP servers, keys,
// the state hash each replica serves and, in a cluster, the custom resource behind each item
// with its conditions) and GET /v1/policies/rate-limits (state and API-created policies).
import { useEffect, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from '../api.js';
import { fmt } from '../format.js';

/** One node of a routing config: a strategy with targets, or a leaf target. */
function RouteNode({ node, path, configId, breakers }) {
  const name = node.name ?? path;
  const breaker = breakers.get(`${configId}:${name}`);
  const mode = node.strategy?.mode;
  const leaf = [node.provider ?? node.virtual_key, node.override_params?.model].filter((part) => part !== undefined).join(' · ');
  const extras = [
    node.retry === undefined ? null : `retry ×${node.retry.attempts ?? '?'}`,
    node.cb_config === undefined ? null : 'breaker',
    node.weight === undefined ? null : `weight ${node.weight}`,
    node.cache?.mode === undefined ? null : `cache ${node.cache.mode}`,
  ].filter((part) => part !== null);
  return html`<li>
    <span class=${mode === undefined ? 'node leaf' : 'node strategy'}>
      ${mode === undefined ? html`<span class="kind">target</span>` : html`<span class="kind">${mode}</span>`}
      ${node.name === undefined ? null : html`<strong>${node.name}</strong>`} ${leaf === '' ? null : html`<code>${leaf}</code>`}
      ${extras.map((extra) => html`<span class="tag">${extra}</span>`)}
      ${breaker === undefined ? null : html`<span class=${`tag breaker-${breaker}`}>circuit ${breaker}</span>`}
    </span>
    ${Array.isArray(node.targets)
      ? html`<ul>
          ${node.targets.map((child, index) => html`<${RouteNode} node=${child} path=${`${path}.targets[${index}]`} configId=${configId} breakers=${breakers} />`)}
        </ul>`
      : null}
  </li>`;
}

// Replicas converge after a change: the configuration is read again while the page is visible.
const REFRESH_MS = 10_000;

const conditionClass = (condition) => `tag cond cond-${String(condition.status).toLowerCase()}`;

/** The custom resource an item came from, with its conditions as compact tags (reason and message on hover). */
function Source({ source }) {
  if (source === undefined || source === null) return html`<span class="muted">—</span>`;
  return html`<span class="source">
    <code>${source.kind}/${source.name}</code> <span class="muted">gen ${source.generation}</span>
    ${source.conditions.map(
      (condition) => html` <span class=${conditionClass(condition)} title=${`${condition.reason}: ${condition.message}`}>${condition.type} ${condition.status === 'True' ? '✓' : condition.status === 'False' ? '✗' : '?'}</span>`,
    )}
  </span>`;
}

function Section({ id, title, count, children }) {
  return html`<section class="config-section" aria-labelledby=${id}>
    <h2 id=${id}>${title} <span class="muted">(${count})</span></h2>
    ${count === 0 ? html`<p class="muted">None.</p>` : children}
  </section>`;
}

export function ConfigurationPage({ configuration: initial }) {
  const [configuration, setConfiguration] = useState(initial);
  const [policies, setPolicies] = useState([]);
  const [error, setError] = useState('');
  useEffect(() => {
    const load = () => api('v1/configuration').then(setConfiguration, (failure) => setError(failure.message));
    void load();
    api('v1/policies/rate-limits', { query: { page_size: 100 } }).then((page) => setPolicies(page.data), (failure) => setError(failure.message));
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') void load();
    }, REFRESH_MS);
    return () => window.clearInterval(timer);
  }, []);
  const breakers = new Map(configuration.breakers.map((entry) => [entry.target, entry.state]));
  const replicas = configuration.replicas ?? [];
  const resources = configuration.resources ?? null;
  const policySources = new Map((configuration.rate_limit_policies ?? []).map((policy) => [policy.id, policy.source]));
  const mcpServers = configuration.mcp_servers ?? [];
  return html`${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    <dl class="facts">
      <dt>State hash</dt><dd><code data-testid="state-hash">${configuration.state_hash}</code> (this replica)</dd>
      <dt>Desired hash</dt><dd><code>${fmt.text(configuration.desired_hash)}</code></dd>
      <dt>Replica</dt><dd>${configuration.replica}</dd>
      <dt>Mode</dt><dd>${configuration.mode === 'cluster' ? `cluster, namespace ${fmt.text(configuration.namespace)}` : 'standalone'}</dd>
      <dt>Seen as</dt><dd>${configuration.workspace === null ? 'every workspace (org_admin)' : `workspace ${configuration.workspace}`}</dd>
    </dl>
    ${configuration.cluster_error === null || configuration.cluster_error === undefined
      ? null
      : html`<p role="alert" class="error">The operator did not answer: ${configuration.cluster_error}</p>`}
    <${Section} id="cfg-replicas" title="Replicas" count=${replicas.length}>
      <table data-testid="replicas">
        <thead><tr><th scope="col">Pod</th><th scope="col">Address</th><th scope="col">Served hash</th><th scope="col">Serves the desired state</th><th scope="col">Checked</th></tr></thead>
        <tbody>
          ${replicas.map(
            (replica) => html`<tr>
              <th scope="row">${fmt.text(replica.pod)}</th><td>${fmt.text(replica.address)}</td><td><code>${fmt.text(replica.served_hash)}</code></td>
              <td><span class=${replica.matches_desired ? 'tag cond cond-true' : 'tag cond cond-false'}>${replica.matches_desired ? 'yes' : replica.served_hash === null ? 'no answer' : 'no (older)'}</span></td>
              <td>${fmt.dateTime(replica.checked_at)}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      ${configuration.replicas_tracked === false ? html`<p class="hint">The operator was not told the proxy Service (operator.proxyService): replicas cannot be asked.</p>` : null}
    <//>
    <${Section} id="cfg-providers" title="Providers" count=${configuration.providers.length}>
      <table>
        <thead><tr><th scope="col">Slug</th><th scope="col">Provider</th><th scope="col">Host</th><th scope="col">Key</th><th scope="col">Guardrails</th><th scope="col">Workspaces</th>${resources === null ? null : html`<th scope="col">Source</th>`}</tr></thead>
        <tbody>
          ${configuration.providers.map(
            (provider) => html`<tr>
              <th scope="row">${provider.slug}</th><td>${provider.provider}</td><td>${fmt.text(provider.custom_host)}</td>
              <td>${provider.has_api_key ? 'set (hidden)' : provider.forward_client_credential ? "client's" : 'none'}</td>
              <td>${[...provider.input_guardrails, ...provider.output_guardrails].join(', ') || '—'}</td>
              <td>${provider.workspaces === null ? 'all' : provider.workspaces.join(', ')}</td>
              ${resources === null ? null : html`<td><${Source} source=${provider.source} /></td>`}
            </tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-configs" title="Saved configs" count=${configuration.configs.length}>
      ${configuration.configs.map(
        (saved) => html`<article class="route-tree" aria-label=${`Routing tree of ${saved.id}`}>
          <h3>${saved.id}</h3>
          ${resources === null ? null : html`<p class="source-line">From <${Source} source=${saved.source} /></p>`}
          <ul class="tree"><${RouteNode} node=${saved.config} path="config" configId=${saved.id} breakers=${breakers} /></ul>
        </article>`,
      )}
    <//>
    <${Section} id="cfg-models" title="Model catalog" count=${configuration.models.length}>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Served by</th><th scope="col">Upstream model</th><th scope="col">Aliases</th>${resources === null ? null : html`<th scope="col">Source</th>`}</tr></thead>
        <tbody>
          ${configuration.models.map(
            (model) => html`<tr><th scope="row">${model.name}</th><td>${model.config === null ? model.target : `config ${model.config}`}</td><td>${model.model}</td><td>${model.aliases.join(', ') || '—'}</td>${resources === null ? null : html`<td><${Source} source=${model.source} /></td>`}</tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-policies" title="Rate-limit policies" count=${policies.length}>
      <table>
        <thead><tr><th scope="col">Id</th><th scope="col">Limit</th><th scope="col">Conditions</th><th scope="col">Per</th><th scope="col">Workspace</th>${resources === null ? null : html`<th scope="col">Source</th>`}</tr></thead>
        <tbody>
          ${policies.map(
            (policy) => html`<tr>
              <th scope="row">${policy.name ?? policy.id}</th><td>${policy.value} ${policy.type} / ${policy.unit}</td>
              <td><code>${policy.conditions.map((condition) => `${condition.key}=${condition.value}`).join(' & ')}</code></td>
              <td>${policy.group_by.map((group) => group.key).join(', ')}</td><td>${fmt.text(policy.workspace_id)}</td>
              ${resources === null ? null : html`<td><${Source} source=${policySources.get(policy.id)} /></td>`}
            </tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-guardrails" title="Guardrails" count=${configuration.guardrails.length}>
      <ul class="plain">
        ${configuration.guardrails.map(
          (guardrail) => html`<li><strong>${guardrail.id}</strong> ${guardrail.deny === true ? html`<span class="tag">deny</span>` : null}
            <code>${(guardrail.checks ?? []).map((check) => check.id).join(', ')}</code>
            ${resources === null ? null : html` — <${Source} source=${guardrail.source} />`}</li>`,
        )}
      </ul>
    <//>
    <${Section} id="cfg-guardrail-policies" title="Guardrail policies" count=${configuration.guardrail_policies.length}>
      <ul class="plain">
        ${configuration.guardrail_policies.map((policy) => html`<li><strong>${policy.id}</strong> <code>${JSON.stringify(policy.conditions)}</code></li>`)}
      </ul>
    <//>
    <${Section} id="cfg-prompts" title="Prompts" count=${configuration.prompts.length}>
      <ul class="plain">${configuration.prompts.map((prompt) => html`<li><strong>${prompt.id}</strong>${resources === null ? null : html` — <${Source} source=${prompt.source} />`}</li>`)}</ul>
    <//>
    <${Section} id="cfg-mcp" title="MCP servers" count=${mcpServers.length}>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Transport</th><th scope="col">URL</th><th scope="col">Headers (names)</th><th scope="col">Workspaces</th>${resources === null ? null : html`<th scope="col">Source</th>`}</tr></thead>
        <tbody>
          ${mcpServers.map(
            (server) => html`<tr>
              <th scope="row">${server.name}</th><td>${server.transport}</td><td><code>${fmt.text(server.url)}</code></td>
              <td>${server.header_names.join(', ') || '—'}</td><td>${server.workspaces === null ? 'all' : server.workspaces.join(', ')}</td>
              ${resources === null ? null : html`<td><${Source} source=${server.source} /></td>`}
            </tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-keys" title="Gateway API keys" count=${configuration.api_keys.length}>
      <table>
        <thead><tr><th scope="col">Id</th><th scope="col">Workspace</th><th scope="col">Scopes</th>${resources === null ? null : html`<th scope="col">Source</th>`}</tr></thead>
        <tbody>
          ${configuration.api_keys.map(
            (key) => html`<tr><th scope="row">${key.id}</th><td>${key.workspace}</td><td>${key.scopes.join(', ')}</td>${resources === null ? null : html`<td><${Source} source=${key.source} /></td>`}</tr>`,
          )}
        </tbody>
      </table>
    <//>
    ${resources === null
      ? html`<p class="hint">Standalone: the configuration comes from the state file, not from custom resources.</p>`
      : html`<${Section} id="cfg-resources" title="Custom resources" count=${resources.length}>
          <table data-testid="resources">
            <thead><tr><th scope="col">Resource</th><th scope="col">Generation</th><th scope="col">Renders</th><th scope="col">Conditions</th></tr></thead>
            <tbody>
              ${resources.map(
                (source) => html`<tr>
                  <th scope="row"><code>${source.kind}/${source.name}</code></th>
                  <td class="num">${source.generation}${source.observed_generation === null || source.observed_generation === source.generation ? '' : ` (status for ${source.observed_generation})`}</td>
                  <td>${source.item === null ? html`<span class="tag cond cond-false">left out</span>` : html`<code>${source.item.section}/${source.item.id}</code>`}</td>
                  <td>
                    <ul class="conditions">
                      ${source.conditions.map(
                        (condition) => html`<li><span class=${conditionClass(condition)}>${condition.type}=${condition.status}</span> <strong>${condition.reason}</strong> ${condition.message}</li>`,
                      )}
                    </ul>
                  </td>
                </tr>`,
              )}
            </tbody>
          </table>
          ${configuration.has_more_resources ? html`<p class="hint">More resources than one answer carries; the first are shown.</p>` : null}
        <//>`}`;
}
