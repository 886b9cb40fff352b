// The aigateway web console: sign in with an admin gateway key, then Requests, Spend &
// health, Configuration and Playground — all read through the gateway's public APIs.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api, session } from './api.js';
import { RequestsPage } from './pages/requests.js';
import { SpendPage } from './pages/spend.js';
import { ConfigurationPage } from './pages/configuration.js';
import { PlaygroundPage } from './pages/playground.js';

const PAGES = [
  { id: 'requests', title: 'Requests', component: RequestsPage },
  { id: 'spend', title: 'Spend & health', component: SpendPage },
  { id: 'configuration', title: 'Configuration', component: ConfigurationPage },
  { id: 'playground', title: 'Playground', component: PlaygroundPage },
];

function currentPage() {
  const id = window.location.hash.replace(/^#\/?/, '').split('?')[0];
  return PAGES.find((page) => page.id === id) ?? PAGES[0];
}

function SignIn({ onSignedIn }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError('');
    try {
      // The configuration read needs the admin scope: it proves the key and names its workspace.
      const configuration = await api('v1/configuration', { key: key.trim() });
      session.signIn(key.trim());
      onSignedIn(configuration);
    } catch (failure) {
      setError(failure.status === 401 ? 'That key is not a gateway API key.' : failure.status === 403 ? 'That key lacks the admin scope.' : failure.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="sign-in" id="main">
    <h1>aigateway console</h1>
    <form onSubmit=${submit}>
      <label for="api-key">Gateway API key (admin scope)</label>
      <input id="api-key" name="api-key" type="password" autocomplete="off" required value=${key} onInput=${(event) => setKey(event.currentTarget.value)} />
      <p class="hint">Kept in this tab's session storage only; sent as <code>x-gateway-api-key</code>.</p>
      <button type="submit" disabled=${busy}>Sign in</button>
      ${error === '' ? null : html`<p role="alert" class="error">${error}</p>`}
    </form>
  </main>`;
}

function Shell({ configuration, onSignOut }) {
  const [page, setPage] = useState(currentPage());
  const heading = useRef(null);
  useEffect(() => {
    const onHash = () => setPage(currentPage());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  // Moving between pages moves keyboard focus to the new page's heading.
  useEffect(() => heading.current?.focus(), [page]);
  const Page = page.component;
  return html`<div class="shell">
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <span class="brand">aigateway</span>
      <nav aria-label="Console">
        <ul>
          ${PAGES.map((entry) => html`<li><a href=${`#/${entry.id}`} aria-current=${entry.id === page.id ? 'page' : undefined}>${entry.title}</a></li>`)}
        </ul>
      </nav>
      <span class="who">${configuration.workspace === null ? 'all workspaces' : `workspace ${configuration.workspace}`}</span>
      <button type="button" class="secondary" onClick=${onSignOut}>Sign out</button>
    </header>
    <main id="main">
      <h1 tabindex="-1" ref=${heading}>${page.title}</h1>
      <${Page} configuration=${configuration} />
    </main>
  </div>`;
}

function App() {
  const [configuration, setConfiguration] = useState(undefined);
  const [checking, setChecking] = useState(session.key() !== null);
  useEffect(() => {
    if (session.key() === null) return;
    api('v1/configuration')
      .then(setConfiguration, () => session.signOut())
      .finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p role="status">Loading…</p>`;
  if (configuration === undefined) return html`<${SignIn} onSignedIn=${setConfiguration} />`;
  return html`<${Shell}
    configuration=${configuration}
    onSignOut=${() => {
      session.signOut();
      setConfiguration(undefined);
    }}
  />`;
}

render(html`<${App} />`, document.getElementById('app'));
