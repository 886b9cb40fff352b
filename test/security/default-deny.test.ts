// Finding 1: every /v1 route answered without a key when the URL was spelled another way
// (`/%76%31/logs`, absolute-form `http://x/v1/logs`), because auth looked at the raw URL
// while the router decoded it. This walks the gateway's own route table — every route any
// plugin registered — and sends each, in every spelling, without a key: only the explicit
// public list may answer anything but 401.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { startRequestLogging, type RequestLogging } from '../../proxy/logs/request-logging.ts';
import { startExchangeLogging, type ExchangeLogging } from '../../proxy/logs/exchange-logging.ts';
import { createGatewayMetrics } from '../../proxy/observability/gateway-metrics.ts';
import { pino } from 'pino';
import { sendRaw, statusOf } from './raw-http.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

// RFC 9728 metadata must be readable before a client has a token (docs/mcp.md). The web
// console's page and bundle hold no secret (docs/console.md).
const PUBLIC = [
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/mcp',
  'GET /.well-known/oauth-protected-resource/mcp/:server',
  'GET /console',
  'GET /console/console.css',
  'GET /console/console.js',
  'GET /console/favicon.svg',
  'GET /health',
  'GET /metrics',
  'GET /ready',
];
const INFERENCE_ONLY_KEY = 'gw-inference-only-key-0123456789abcdef';

let harness: Harness;
let logging: RequestLogging | undefined;
let exchanges: ExchangeLogging | undefined;
let dataDir: string;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-deny-'));
  logging = await startRequestLogging({
    kind: 'sqlite',
    dataDir,
    databaseUrl: undefined,
    retentionDays: 1,
    metrics: createGatewayMetrics(),
    logger: pino({ level: 'silent' }),
  });
  // With --log-bodies' routes too (GET /v1/logs/{id}/exchange).
  exchanges = await startExchangeLogging({ kind: 'sqlite', dataDir, retentionDays: 1, logger: pino({ level: 'silent' }) });
  harness = await startHarness({
    state: baseState(),
    requestSink: logging === undefined ? undefined : exchanges.wrapSink(logging.sink),
    plugins: [
      batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') } }),
      ...(logging === undefined ? [] : [logging.routes, exchanges.capture, exchanges.routes(logging.store)]),
    ],
    console: true,
  });
  await harness.writeState(baseState({ apiKeys: [...(baseState()['apiKeys'] as unknown[]), { id: 'inference-only', key: INFERENCE_ONLY_KEY, scopes: ['inference'] }] }));
  // The reload is seen when the new key authenticates.
  await eventually(
    async () => (await rawStatus(harness.gateway.origin, 'GET', '/v1/no-such-route', { 'x-gateway-api-key': INFERENCE_ONLY_KEY })) === 404,
    'the state with the inference-only key',
    { timeoutMs: 10_000 },
  );
});

after(async () => {
  await harness?.close();
  await logging?.close();
  await exchanges?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** Sends exactly `target` as the request-target (fetch would normalise it) and returns the status. */
async function rawStatus(origin: string, method: string, target: string, headers: Record<string, string> = {}): Promise<number> {
  const { hostname, port } = new URL(origin);
  const body = method === 'GET' || method === 'DELETE' ? '' : '{}';
  const lines = [`${method} ${target} HTTP/1.1`, `host: ${hostname}:${port}`, 'connection: close'];
  if (body !== '') lines.push('content-type: application/json', `content-length: ${body.length}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  const answer = await sendRaw(origin, `${lines.join('\r\n')}\r\n\r\n${body}`);
  const status = statusOf(answer);
  if (Number.isNaN(status)) throw new Error(`no status line for ${method} ${target}: ${JSON.stringify(answer.slice(0, 200))}`);
  return status;
}

/** A concrete path for a route pattern (`:id` → a value, `*` → a segment). */
function concrete(url: string): string {
  return url.replace(/:[A-Za-z_]+/g, 'x1').replace(/\*/g, 'x1');
}

/** The spellings an attacker tries for one path; all must reach the same decision. */
function spellings(path: string, origin: string): string[] {
  const encoded = path.replace(/^\/([a-z])([a-z0-9])/i, (_all, a: string, b: string) => `/%${a.charCodeAt(0).toString(16)}%${b.charCodeAt(0).toString(16)}`);
  return [path, encoded, `${origin}${path}`, `http://x${path}`, `/${path}`, `${path}/`, path.toUpperCase(), path.replace(/\//g, '//')];
}

describe('default deny on the matched route', () => {
  test('the public list is exactly health, readiness, metrics, OAuth metadata and the console\'s static files', () => {
    const routes = harness.gateway.server.routes();
    const publicRoutes = routes.filter((route) => route.public).map((route) => `${route.method} ${route.url}`).sort();
    assert.deepEqual(publicRoutes, PUBLIC);
    // The table is the whole gateway: inference, files, batches, fine-tuning, logs, policies, prompts.
    const urls = new Set(routes.map((route) => route.url));
    for (const url of ['/v1/chat/completions', '/v1/files', '/v1/batches', '/v1/fine_tuning/jobs', '/v1/logs', '/v1/policies/rate-limits', '/v1/configuration', '/mcp', '/mcp/:server', '/v1/logs/:id/exchange', '/v1/policies/usage-limits', '/v1/realtime']) {
      assert.ok(urls.has(url), `${url} is in the route table`);
    }
    assert.ok(routes.length >= 25, `the route table has every plugin's routes (${routes.length})`);
  });

  test('every registered route, in every spelling, is 401 without a key', { timeout: 60_000 }, async () => {
    const origin = harness.gateway.origin;
    const failures: string[] = [];
    let sent = 0;
    for (const route of harness.gateway.server.routes()) {
      if (route.public) continue;
      for (const target of spellings(concrete(route.url), origin)) {
        const status = await rawStatus(origin, route.method, target);
        sent++;
        if (status !== 401) failures.push(`${route.method} ${target} → ${status}`);
      }
    }
    assert.deepEqual(failures, []);
    assert.ok(sent > 100, `sent ${sent} requests`);
  });

  test('a wrong key is 401 on every route too, and scopes hold in every spelling', { timeout: 60_000 }, async () => {
    const origin = harness.gateway.origin;
    const failures: string[] = [];
    for (const route of harness.gateway.server.routes()) {
      if (route.public) continue;
      const path = concrete(route.url);
      const wrong = await rawStatus(origin, route.method, `http://x${path}`, { 'x-gateway-api-key': 'gw-not-a-key-000000000000000000000' });
      if (wrong !== 401) failures.push(`${route.method} ${path} with a wrong key → ${wrong}`);
      if (route.scope === 'admin') {
        for (const target of spellings(path, origin)) {
          // The inference-only key may not read admin routes however the path is spelled
          // (403 where the spelling matched the route, 404 where it matched none).
          const status = await rawStatus(origin, route.method, target, { 'x-gateway-api-key': INFERENCE_ONLY_KEY });
          if (status !== 403 && status !== 404) failures.push(`${route.method} ${target} with an inference-only key → ${status}`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  test('public routes answer without a key; an unknown route needs a key before its 404', async () => {
    const origin = harness.gateway.origin;
    assert.equal(await rawStatus(origin, 'GET', '/health'), 200);
    assert.equal(await rawStatus(origin, 'GET', '/ready'), 200);
    assert.equal(await rawStatus(origin, 'GET', '/metrics'), 200);
    assert.equal(await rawStatus(origin, 'GET', '/v1/no-such-route'), 401);
    assert.equal(await rawStatus(origin, 'GET', '/v1/no-such-route', { 'x-gateway-api-key': TEST_GATEWAY_KEY }), 404);
  });
});

