// Configuration, read-only: GET /v1/configuration (providers without keys, saved configs
// drawn as routing trees with breaker states, catalog, guardrails, prompts, keys, state
// hash) and GET /v1/policies/rate-limits (state and API-created policies).
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
    api('v1/configuration').then(setConfiguration, (failure) => setError(failure.message));
    api('v1/policies/rate-limits', { query: { page_size: 100 } }).then((page) => setPolicies(page.data), (failure) => setError(failure.message));
  }, []);
  const breakers = new Map(configuration.breakers.map((entry) => [entry.target, entry.state]));
  return html`${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    <dl class="facts">
      <dt>State hash</dt><dd><code data-testid="state-hash">${configuration.state_hash}</code></dd>
      <dt>Replica</dt><dd>${configuration.replica}</dd>
      <dt>Seen as</dt><dd>${configuration.workspace === null ? 'every workspace (org_admin)' : `workspace ${configuration.workspace}`}</dd>
    </dl>
    <${Section} id="cfg-providers" title="Providers" count=${configuration.providers.length}>
      <table>
        <thead><tr><th scope="col">Slug</th><th scope="col">Provider</th><th scope="col">Host</th><th scope="col">Key</th><th scope="col">Guardrails</th><th scope="col">Workspaces</th></tr></thead>
        <tbody>
          ${configuration.providers.map(
            (provider) => html`<tr>
              <th scope="row">${provider.slug}</th><td>${provider.provider}</td><td>${fmt.text(provider.custom_host)}</td>
              <td>${provider.has_api_key ? 'set (hidden)' : provider.forward_client_credential ? "client's" : 'none'}</td>
              <td>${[...provider.input_guardrails, ...provider.output_guardrails].join(', ') || '—'}</td>
              <td>${provider.workspaces === null ? 'all' : provider.workspaces.join(', ')}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-configs" title="Saved configs" count=${configuration.configs.length}>
      ${configuration.configs.map(
        (saved) => html`<article class="route-tree" aria-label=${`Routing tree of ${saved.id}`}>
          <h3>${saved.id}</h3>
          <ul class="tree"><${RouteNode} node=${saved.config} path="config" configId=${saved.id} breakers=${breakers} /></ul>
        </article>`,
      )}
    <//>
    <${Section} id="cfg-models" title="Model catalog" count=${configuration.models.length}>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Served by</th><th scope="col">Upstream model</th><th scope="col">Aliases</th></tr></thead>
        <tbody>
          ${configuration.models.map(
            (model) => html`<tr><th scope="row">${model.name}</th><td>${model.config === null ? model.target : `config ${model.config}`}</td><td>${model.model}</td><td>${model.aliases.join(', ') || '—'}</td></tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-policies" title="Rate-limit policies" count=${policies.length}>
      <table>
        <thead><tr><th scope="col">Id</th><th scope="col">Limit</th><th scope="col">Conditions</th><th scope="col">Per</th><th scope="col">Workspace</th></tr></thead>
        <tbody>
          ${policies.map(
            (policy) => html`<tr>
              <th scope="row">${policy.name ?? policy.id}</th><td>${policy.value} ${policy.type} / ${policy.unit}</td>
              <td><code>${policy.conditions.map((condition) => `${condition.key}=${condition.value}`).join(' & ')}</code></td>
              <td>${policy.group_by.map((group) => group.key).join(', ')}</td><td>${fmt.text(policy.workspace_id)}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Section} id="cfg-guardrails" title="Guardrails" count=${configuration.guardrails.length}>
      <ul class="plain">
        ${configuration.guardrails.map(
          (guardrail) => html`<li><strong>${guardrail.id}</strong> ${guardrail.deny === true ? html`<span class="tag">deny</span>` : null}
            <code>${(guardrail.checks ?? []).map((check) => check.id).join(', ')}</code></li>`,
        )}
      </ul>
    <//>
    <${Section} id="cfg-guardrail-policies" title="Guardrail policies" count=${configuration.guardrail_policies.length}>
      <ul class="plain">
        ${configuration.guardrail_policies.map((policy) => html`<li><strong>${policy.id}</strong> <code>${JSON.stringify(policy.conditions)}</code></li>`)}
      </ul>
    <//>
    <${Section} id="cfg-prompts" title="Prompts" count=${configuration.prompts.length}>
      <ul class="plain">${configuration.prompts.map((prompt) => html`<li><strong>${prompt.id}</strong></li>`)}</ul>
    <//>
    <${Section} id="cfg-keys" title="Gateway API keys" count=${configuration.api_keys.length}>
      <table>
        <thead><tr><th scope="col">Id</th><th scope="col">Workspace</th><th scope="col">Scopes</th></tr></thead>
        <tbody>${configuration.api_keys.map((key) => html`<tr><th scope="row">${key.id}</th><td>${key.workspace}</td><td>${key.scopes.join(', ')}</td></tr>`)}</tbody>
      </table>
    <//>`;
}
