// The web console end to end in a real browser: Debian's headless Chromium driven by
// playwright-core (no browser download) against a running gateway with a mock provider
// and the SQLite request log. Sign-in, filtering, a request's detail (a fallback's
// attempts), the spend charts and budgets, the configuration view, the playground's streamed answer
// and route, keyboard focus and labels, and the console behind a path prefix (an Ingress).
// Any console error, page error or CSP violation fails the test.
// With CONSOLE_SCREENSHOTS=<dir> it also writes the screenshots docs/console.md shows.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dump } from 'js-yaml';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { pino } from 'pino';
import { startRequestLogging, type RequestLogging } from '../../proxy/logs/request-logging.ts';
import { startExchangeLogging, type ExchangeLogging } from '../../proxy/logs/exchange-logging.ts';
import type { ClusterView } from '../../proxy/console/cluster-view.ts';
import { controlPlaneRoutes } from '../../operator/api/control-plane.ts';
import { startGateway, type RunningGateway } from '../../proxy/start-gateway.ts';
import { createGatewayMetrics } from '../../proxy/observability/gateway-metrics.ts';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;
const PROVIDER_KEY = 'sk-console-upstream-secret-0123456789';
const SCREENSHOTS = process.env['CONSOLE_SCREENSHOTS'];

let dir: string;
let mock: MockOpenAI;
let logging: RequestLogging | undefined;
let exchanges: ExchangeLogging | undefined;
let harness: Harness;
let browser: Browser;
let prefixProxy: Server;
let prefixOrigin: string;

function state(): Record<string, unknown> {
  return baseState({
    providers: [
      { slug: 'mock', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url },
      // Nothing listens on port 1: the fallback's first target fails and the second answers.
      { slug: 'down', provider: 'openai', apiKey: PROVIDER_KEY, customHost: 'http://127.0.0.1:1/v1' },
    ],
    configs: [
      {
        id: 'fallback-prod',
        config: {
          strategy: { mode: 'fallback' },
          targets: [
            { name: 'primary', provider: '@down', override_params: { model: 'gpt-4o' }, cb_config: { failure_threshold: 1, cooldown_interval: 60_000 } },
            { name: 'backup', provider: '@mock', override_params: { model: 'gpt-4o-mini' } },
          ],
        },
      },
    ],
    models: [{ name: 'gpt-4o-mini', target: '@mock' }],
    usageLimitPolicies: [
      { id: 'monthly', name: 'Default workspace, monthly', type: 'cost', credit_limit: 5, periodic_reset: 'monthly', conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'workspace_id' }] },
    ],
    rateLimitPolicies: [{ id: 'per-key', type: 'requests', unit: 'rpm', value: 1000, conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'api_key' }] }],
  });
}

async function chat(body: Record<string, unknown>, headers: Record<string, string>): Promise<number> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }], ...body }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** A page that records every console error, page error and CSP violation. */
async function openPage(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  // Injected by the browser (not by the page), so the CSP does not stop it.
  await page.addInitScript({
    content: "document.addEventListener('securitypolicyviolation', (event) => console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));",
  });
  return { page, problems };
}

async function shot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS !== undefined) await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

before(async () => {
  if (SKIP !== false) return;
  dir = await mkdtemp(join(tmpdir(), 'aigw-console-'));
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  logging = await startRequestLogging({
    kind: 'sqlite',
    dataDir: dir,
    databaseUrl: undefined,
    retentionDays: 1,
    metrics: createGatewayMetrics(),
    logger: pino({ level: 'silent' }),
  });
  // Headers and bodies kept (serve --log-bodies): the detail view shows them.
  exchanges = await startExchangeLogging({ kind: 'sqlite', dataDir: dir, retentionDays: 1, logger: pino({ level: 'silent' }) });
  harness = await startHarness({
    state: state(),
    requestSink: logging === undefined ? undefined : exchanges.wrapSink(logging.sink),
    plugins: logging === undefined ? [] : [logging.routes, exchanges.capture, exchanges.routes(logging.store)],
    console: true,
  });
  await logging?.ready;
  // Traffic to look at: two teams, an error, and a fallback past a dead target.
  assert.equal(await chat({ model: 'gpt-4o-mini' }, { 'x-gateway-trace-id': 'trace-search-1', 'x-gateway-metadata': '{"team":"search"}' }), 200);
  assert.equal(await chat({ model: 'gpt-4o-mini' }, { 'x-gateway-trace-id': 'trace-ads-1', 'x-gateway-metadata': '{"team":"ads"}' }), 200);
  assert.equal(await chat({ model: 'no-such-model' }, { 'x-gateway-trace-id': 'trace-bad-1' }), 404);
  assert.equal(await chat({ model: 'gpt-4o' }, { 'x-gateway-trace-id': 'trace-fallback-1', 'x-gateway-config': 'fallback-prod' }), 200);
  // A path-prefixed Ingress: /gw/... reaches the gateway with the prefix stripped.
  const gatewayUrl = new URL(harness.gateway.origin);
  prefixProxy = createServer((incoming, outgoing) => {
    if (!incoming.url?.startsWith('/gw/')) return void outgoing.writeHead(404).end();
    const forward = httpRequest(
      { host: gatewayUrl.hostname, port: gatewayUrl.port, method: incoming.method, path: incoming.url.slice(3), headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forward.on('error', () => outgoing.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => prefixProxy.listen(0, '127.0.0.1', resolve));
  const address = prefixProxy.address();
  prefixOrigin = typeof address === 'object' && address !== null ? `http://127.0.0.1:${address.port}` : '';
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    // launch() gives the browser a fresh temporary profile of its own (--user-data-dir).
  });
  // Every record is in the log before the browser looks.
  await eventually(async () => {
    const response = await fetch(`${harness.gateway.url}/logs?limit=10`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    return ((await response.json()) as { data: unknown[] }).data.length >= 4;
  }, 'four request log records', { timeoutMs: 10_000 });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (prefixProxy === undefined ? resolve(undefined) : prefixProxy.close(resolve)));
  await harness?.close();
  await exchanges?.close();
  await logging?.close();
  await mock?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the web console in Chromium', { skip: SKIP }, () => {
  test('sign-in, requests, detail, spend, configuration and playground, with no console error', { timeout: 60_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const { page, problems } = await openPage(context);
    // Every API call the console makes, to check that each is bounded.
    const asked: URL[] = [];
    page.on('request', (sent) => {
      const url = new URL(sent.url());
      if (url.pathname.startsWith('/v1/')) asked.push(url);
    });
    try {
      const response = await page.goto(`${harness.gateway.origin}/console`);
      assert.equal(response?.status(), 200);
      assert.match(page.url(), /\/console\/$/);
      const csp = response?.headers()['content-security-policy'] ?? '';
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /style-src 'self'(;|$)/);
      assert.equal(response?.headers()['x-content-type-options'], 'nosniff');

      // Sign-in: a labelled field; the key goes to sessionStorage only.
      await page.getByLabel('Gateway API key (admin scope)').fill(TEST_GATEWAY_KEY);
      await shot(page, 'sign-in');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Console' }).waitFor();
      const storage = await page.evaluate('({ local: localStorage.length, session: Object.keys(sessionStorage), cookie: document.cookie })');
      assert.deepEqual(storage, { local: 0, session: ['aigateway.console.key'], cookie: '' });
      assert.equal(await page.content().then((html) => html.includes(TEST_GATEWAY_KEY)), false, 'the key is not in the page');

      // Requests: every seeded request is listed, with its model and trace id.
      const table = page.locator('table.requests tbody');
      await table.getByText('trace-fallback-1').waitFor();
      for (const trace of ['trace-search-1', 'trace-ads-1', 'trace-bad-1']) await table.getByText(trace).waitFor();
      await shot(page, 'requests');
      // Live: a request made now appears without any click.
      assert.equal(await chat({ model: 'gpt-4o-mini' }, { 'x-gateway-trace-id': 'trace-live-1', 'x-gateway-metadata': '{"team":"ads"}' }), 200);
      await table.getByText('trace-live-1').waitFor({ timeout: 15_000 });

      // Filtering by metadata, then by status class.
      await page.getByLabel('Metadata').fill('team=search');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await eventually(async () => (await table.locator('tr').count()) === 1, 'only the search team row');
      assert.equal(await table.getByText('trace-search-1').count(), 1);
      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByLabel('Status').fill('4xx');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await eventually(async () => (await table.locator('tr').count()) === 1, 'only the 404 row');
      assert.equal(await table.getByText('trace-bad-1').count(), 1);
      await page.getByLabel('Status').fill('');
      await page.getByLabel('Trace id').fill('trace-fallback-1');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await eventually(async () => (await table.locator('tr').count()) === 1, 'only the fallback row');

      // Detail: the fallback's two attempts, the dead target first.
      await page.getByRole('button', { name: 'Details of request trace-fallback-1' }).click();
      const detail = page.getByRole('region', { name: /Request trace-fallback-1/ });
      await detail.locator('table.attempts tbody tr').nth(1).waitFor();
      const attempts = await detail.locator('table.attempts tbody tr').allInnerTexts();
      assert.equal(attempts.length, 2);
      assert.match(attempts[0] ?? '', /config\.targets\[0\]/);
      assert.match(attempts[1] ?? '', /config\.targets\[1\][\s\S]*200/);
      assert.match(await detail.innerText(), /fallback-prod/);
      // Headers with the keys redacted, and both bodies.
      const exchange = detail.getByTestId('exchange');
      await exchange.waitFor();
      const exchangeText = await exchange.innerText();
      assert.match(exchangeText, /x-gateway-api-key\s+\[redacted\]/);
      assert.match(exchangeText, /x-gateway-config\s+fallback-prod/);
      assert.match(exchangeText, /Request body[\s\S]*"content":\s*"hello"/);
      assert.match(exchangeText, /Response body[\s\S]*chat\.completion/);
      assert.equal((await page.content()).includes(TEST_GATEWAY_KEY), false, 'no gateway key in the page');
      await shot(page, 'request-detail');
      await page.keyboard.press('Escape');
      await detail.waitFor({ state: 'detached' });
      assert.equal(await page.evaluate('document.activeElement?.getAttribute("aria-label")'), 'Details of request trace-fallback-1', 'focus returns to the row');

      // Spend & health: totals and five charts drawn.
      await page.getByRole('link', { name: 'Spend & health' }).click();
      await eventually(async () => (await page.locator('.chart canvas').count()) >= 5, 'five charts');
      assert.match(await page.locator('.cards').innerText(), /Requests\s*5/);
      await page.locator('table.groups').getByText('gpt-4o-mini').first().waitFor();
      // Budgets: the policy with this month's spend and what is left of its $5.
      const budget = page.locator('table.budgets tbody tr').first();
      await budget.waitFor();
      assert.match(await budget.innerText(), /Default workspace, monthly\s+workspace_id=default\s+monthly \(m\d{4}-\d\d\)\s+\$0\.0000\d+\s+\$(4\.99|5\.00)\d*\s+\$5\.0000/);
      await shot(page, 'spend');

      // Configuration: the served hash, the routing tree with the tripped breaker, no provider key.
      await page.getByRole('link', { name: 'Configuration' }).click();
      const ready = (await (await fetch(`${harness.gateway.origin}/ready`)).json()) as { config_hash: string };
      await page.getByTestId('state-hash').getByText(ready.config_hash).waitFor();
      // Standalone: one replica, this process, serving the desired state.
      const replicas = await page.getByTestId('replicas').locator('tbody tr').allInnerTexts();
      assert.equal(replicas.length, 1);
      assert.match(replicas[0] ?? '', new RegExp(`${ready.config_hash}[\\s\\S]*yes`));
      const tree = page.getByRole('article', { name: 'Routing tree of fallback-prod' });
      assert.match(await tree.innerText(), /fallback[\s\S]*primary[\s\S]*circuit open[\s\S]*backup/);
      // The rate-limit policies arrive from their own API call, after the configuration.
      await page.locator('main').getByText('per-key').first().waitFor();
      const configText = await page.locator('main').innerText();
      assert.match(configText, /mock[\s\S]*set \(hidden\)/);
      assert.match(configText, /per-key/);
      assert.equal((await page.content()).includes(PROVIDER_KEY), false, 'no provider key in the page');
      await shot(page, 'configuration');

      // Playground: the streamed answer, then the route and cost from the log.
      await page.getByRole('link', { name: 'Playground' }).click();
      await page.getByLabel('Model', { exact: true }).selectOption('gpt-4o-mini');
      await page.getByLabel('Message').fill('Say hello');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByTestId('answer').getByText(DEFAULT_REPLY_TEXT).waitFor();
      const route = page.getByTestId('route');
      await route.waitFor({ timeout: 15_000 });
      assert.match(await route.innerText(), /Provider\s*openai[\s\S]*Model served\s*gpt-4o-mini[\s\S]*Cost\s*\$\d/);
      // A saved config: the route shows the dead target skipped (its circuit is open) and the backup.
      await page.getByLabel('Saved config').selectOption('fallback-prod');
      await page.getByLabel('Message').fill('And through the config?');
      await page.getByRole('button', { name: 'Send' }).click();
      await route.getByText('config.targets[0] → circuit_open').waitFor({ timeout: 15_000 });
      assert.match(await route.innerText(), /Config\s*fallback-prod config\.targets\[1\][\s\S]*config\.targets\[1\] → 200/);
      assert.match(await page.getByTestId('answer').innerText(), new RegExp(DEFAULT_REPLY_TEXT));
      await shot(page, 'playground');

      // Bounded queries: log pages of at most 100 within a time range, summaries over at most a week.
      const logReads = asked.filter((url) => url.pathname === '/v1/logs');
      assert.ok(logReads.length > 0);
      for (const url of logReads) {
        assert.ok(Number(url.searchParams.get('limit')) <= 100, url.search);
        assert.ok(url.searchParams.has('from') || url.searchParams.has('trace_id'), `a time range: ${url.search}`);
      }
      const summaries = asked.filter((url) => url.pathname === '/v1/analytics/summary');
      assert.ok(summaries.length > 0);
      for (const url of summaries) {
        const span = Number(url.searchParams.get('to')) - Number(url.searchParams.get('from'));
        assert.ok(span > 0 && span <= 7 * 86_400_000, url.search);
      }

      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  test('keyboard and labels: every control is labelled; the nav works from the keyboard and moves focus to the page', { timeout: 30_000 }, async () => {
    const context = await browser.newContext();
    const { page, problems } = await openPage(context);
    try {
      await page.goto(`${harness.gateway.origin}/console/`);
      await page.getByLabel('Gateway API key (admin scope)').focus();
      await page.keyboard.type(TEST_GATEWAY_KEY);
      await page.keyboard.press('Enter');
      await page.getByRole('navigation', { name: 'Console' }).waitFor();
      for (const name of ['Requests', 'Spend & health', 'Configuration', 'Playground']) {
        await page.getByRole('link', { name }).click();
        const unlabelled = await page.evaluate(
          "[...document.querySelectorAll('input, select, textarea')].filter((element) => element.labels.length === 0 && !element.getAttribute('aria-label')).map((element) => element.outerHTML)",
        );
        assert.deepEqual(unlabelled, [], `unlabelled controls on ${name}`);
      }
      // Tab through the header to the Requests link and follow it with Enter.
      await page.getByRole('link', { name: 'Configuration' }).focus();
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('Shift+Tab');
      const focused = (what: string): Promise<unknown> => page.evaluate(`document.activeElement?.${what}`);
      assert.equal(await focused('textContent'), 'Requests');
      await page.keyboard.press('Enter');
      await eventually(async () => (await focused('tagName')) === 'H1', 'focus on the page heading');
      assert.equal(await focused('textContent'), 'Requests');
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  test('in a cluster: each replica with the hash it serves, and the custom resource behind each item with its conditions', { timeout: 30_000 }, async () => {
    // A proxy whose operator answers a canned view (the operator's side is test/operator/cluster-view.test.ts).
    let desired = '';
    const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, last_transition_time: '2026-01-01T00:00:00Z' });
    const source = (kind: string, name: string, generation: number, item: ClusterView['sources'][number]['item'], conditions: ClusterView['sources'][number]['conditions']) => ({
      kind,
      namespace: 'aigw',
      name,
      generation,
      observed_generation: generation,
      rendered: item !== null,
      item,
      conditions,
    });
    const view = (): ClusterView => ({
      object: 'gateway.cluster',
      namespace: 'aigw',
      desired_hash: desired,
      replicas_tracked: true,
      replicas: [
        { pod: 'aigw-proxy-7d9f-abcde', address: '10.42.0.11:8787', served_hash: desired, matches_desired: true, checked_at: new Date().toISOString() },
        { pod: 'aigw-proxy-7d9f-fghij', address: '10.42.0.12:8787', served_hash: 'sha256:0ld0ld', matches_desired: false, checked_at: new Date().toISOString() },
      ],
      sources: [
        source('GatewayConfig', 'fallback-prod', 4, { section: 'configs', id: 'fallback-prod' }, [
          condition('Accepted', 'True', 'Accepted', 'The spec is valid.'),
          condition('Ready', 'True', 'Rendered', 'Part of the rendered gateway state.'),
          condition('Programmed', 'False', 'Pending', 'Waiting for every ready proxy replica to serve this generation.'),
        ]),
        source('Provider', 'broken', 2, null, [condition('Accepted', 'False', 'InvalidSpec', 'spec.customHost: Invalid URL'), condition('Ready', 'False', 'InvalidSpec', 'Left out of the gateway state: spec.customHost: Invalid URL')]),
        source('Provider', 'mock', 3, { section: 'providers', id: 'mock' }, [condition('Ready', 'True', 'Rendered', 'Part of the rendered gateway state.'), condition('Programmed', 'True', 'Programmed', 'Every ready proxy replica serves this generation.')]),
      ],
      has_more_sources: false,
    });
    const clusterDir = await mkdtemp(join(tmpdir(), 'aigw-console-cluster-'));
    await writeFile(join(clusterDir, 'gateway.yaml'), dump(state()));
    const cluster: RunningGateway = await startGateway({
      sources: { statePath: join(clusterDir, 'gateway.yaml') },
      env: {},
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
      console: true,
      controlPlane: controlPlaneRoutes, // policies (in a cluster: forwarded to the operator)
      clusterView: async () => view(),
    });
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const { page, problems } = await openPage(context);
    try {
      desired = ((await (await fetch(`${cluster.origin}/ready`)).json()) as { config_hash: string }).config_hash;
      await page.goto(`${cluster.origin}/console/#/configuration`);
      await page.getByLabel('Gateway API key (admin scope)').fill(TEST_GATEWAY_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const replicas = page.getByTestId('replicas').locator('tbody tr');
      await replicas.nth(1).waitFor();
      assert.match(await replicas.nth(0).innerText(), /aigw-proxy-7d9f-abcde[\s\S]*yes/);
      assert.match(await replicas.nth(1).innerText(), /aigw-proxy-7d9f-fghij[\s\S]*sha256:0ld0ld[\s\S]*no \(older\)/);
      // The custom resource each item came from, on the item and in the resources table.
      const mockRow = page.locator('#cfg-providers ~ table tbody tr, section[aria-labelledby="cfg-providers"] tbody tr').filter({ hasText: 'Provider/mock' });
      assert.match(await mockRow.first().innerText(), /Provider\/mock[\s\S]*gen 3[\s\S]*Ready ✓[\s\S]*Programmed ✓/);
      assert.match(await page.getByRole('article', { name: 'Routing tree of fallback-prod' }).innerText(), /GatewayConfig\/fallback-prod[\s\S]*Programmed ✗/);
      const resources = await page.getByTestId('resources').locator('tbody tr').allInnerTexts();
      assert.equal(resources.length, 3);
      assert.match(resources[1] ?? '', /Provider\/broken[\s\S]*left out[\s\S]*Accepted=False[\s\S]*InvalidSpec[\s\S]*Invalid URL/);
      await shot(page, 'configuration-cluster');
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
      await cluster.close();
      await rm(clusterDir, { recursive: true, force: true });
    }
  });

  test('behind a path prefix (an Ingress at /gw/) the console loads, signs in and reads the logs through relative URLs', { timeout: 30_000 }, async () => {
    const context = await browser.newContext();
    const { page, problems } = await openPage(context);
    try {
      await page.goto(`${prefixOrigin}/gw/console`);
      assert.match(page.url(), /\/gw\/console\/$/);
      await page.getByLabel('Gateway API key (admin scope)').fill(TEST_GATEWAY_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('table.requests tbody').getByText('trace-ads-1').waitFor();
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });
});
