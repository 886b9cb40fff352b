// The console's server side without a browser: off by default (nothing registered), its
// static routes and security headers when on, and GET /v1/configuration — admin only,
// no key of any kind in the answer, confined to the caller's workspace unless org_admin.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { redact, REDACTED } from '../../proxy/endpoints/configuration-routes.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const PROVIDER_KEY = 'sk-config-read-secret-0123456789abcdef';
const TEAM_B_ADMIN = 'gw-team-b-admin-key-0123456789abcd';
const ORG_ADMIN = 'gw-org-admin-key-0123456789abcdefgh';
const INFERENCE_ONLY = 'gw-inference-only-console-012345678';

let on: Harness;
let off: Harness;
const records: RequestRecord[] = [];

function state(): Record<string, unknown> {
  const base = baseState({
    providers: [
      { slug: 'shared', provider: 'openai', apiKey: PROVIDER_KEY },
      { slug: 'team-a-only', provider: 'openai', apiKey: PROVIDER_KEY, workspaces: ['default'] },
      { slug: 'team-b-only', provider: 'anthropic', workspaces: ['team-b'] },
    ],
    configs: [
      { id: 'a-config', workspaces: ['default'], config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@team-a-only' }, { provider: '@shared' }] } },
      { id: 'b-config', workspaces: ['team-b'], config: { provider: '@team-b-only', override_params: { model: 'claude-x', max_tokens: 100 } } },
    ],
  });
  base['apiKeys'] = [
    ...(base['apiKeys'] as unknown[]),
    { id: 'team-b-admin', key: TEAM_B_ADMIN, workspace: 'team-b', scopes: ['admin'] },
    { id: 'org-admin', key: ORG_ADMIN, workspace: 'ops', scopes: ['org_admin'] },
    { id: 'inference-only', key: INFERENCE_ONLY, scopes: ['inference'] },
  ];
  return base;
}

async function get(harness: Harness, path: string, key?: string): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${harness.gateway.origin}${path}`, { headers: key === undefined ? {} : { 'x-gateway-api-key': key }, redirect: 'manual' });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

before(async () => {
  on = await startHarness({ state: state(), console: true, requestSink: (record) => records.push(record) });
  off = await startHarness({ state: state() });
});

after(async () => {
  await on?.close();
  await off?.close();
});

describe('the console routes', () => {
  test('off by default: no /console route at all (a key is needed, then 404)', async () => {
    assert.equal((await get(off, '/console/')).status, 401);
    assert.equal((await get(off, '/console/', TEST_GATEWAY_KEY)).status, 404);
    assert.equal((await get(off, '/console/console.js', TEST_GATEWAY_KEY)).status, 404);
    assert.equal(off.gateway.server.routes().some((route) => route.url.startsWith('/console')), false);
  });

  test('on: the page and its bundle are public, with a strict CSP and no inline script or style', async () => {
    const page = await get(on, '/console/');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      assert.ok(csp.includes(directive), `CSP has ${directive}`);
    }
    assert.equal(csp.includes('unsafe'), false);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    // Relative asset URLs only (a path-prefixed Ingress), and nothing inline.
    assert.match(page.text, /<script type="module" src="console.js"><\/script>/);
    assert.equal(/<script>|<style|\sstyle=|\son[a-z]+=|https?:\/\//i.test(page.text), false);
    const script = await get(on, '/console/console.js');
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(script.text.includes(TEST_GATEWAY_KEY), false);
    assert.match((await get(on, '/console/console.css')).headers.get('content-type') ?? '', /^text\/css/);
    assert.equal((await get(on, '/console/favicon.svg')).status, 200);
  });

  test('/console redirects relatively to /console/, so a prefix in front is kept', async () => {
    const answer = await get(on, '/console');
    assert.equal(answer.status, 302);
    assert.equal(answer.headers.get('location'), 'console/');
  });
});

describe('GET /v1/configuration', () => {
  test('needs the admin scope', async () => {
    assert.equal((await get(on, '/v1/configuration')).status, 401);
    assert.equal((await get(on, '/v1/configuration', INFERENCE_ONLY)).status, 403);
  });

  test('names the served state hash and shows no key of any kind', async () => {
    const answer = await get(on, '/v1/configuration', TEST_GATEWAY_KEY);
    assert.equal(answer.status, 200);
    const ready = (await (await fetch(`${on.gateway.origin}/ready`)).json()) as { config_hash: string };
    const body = JSON.parse(answer.text) as { state_hash: string; providers: Array<{ slug: string; has_api_key: boolean }> };
    assert.equal(body.state_hash, ready.config_hash);
    for (const secret of [PROVIDER_KEY, TEST_GATEWAY_KEY, TEAM_B_ADMIN, ORG_ADMIN, INFERENCE_ONLY]) assert.equal(answer.text.includes(secret), false);
    assert.deepEqual(
      body.providers.map((provider) => [provider.slug, provider.has_api_key]),
      [
        ['shared', true],
        ['team-a-only', true],
      ],
    );
  });

  test('standalone: one replica, this process, serving the state it loaded; no custom resource', async () => {
    const body = JSON.parse((await get(on, '/v1/configuration', TEST_GATEWAY_KEY)).text) as Record<string, unknown>;
    const ready = (await (await fetch(`${on.gateway.origin}/ready`)).json()) as { config_hash: string };
    assert.equal(body['mode'], 'standalone');
    assert.equal(body['desired_hash'], ready.config_hash);
    const replicas = body['replicas'] as Array<{ pod: string; served_hash: string; matches_desired: boolean; checked_at: string }>;
    assert.equal(replicas.length, 1);
    assert.equal(replicas[0]?.pod, body['replica']);
    assert.equal(replicas[0]?.served_hash, ready.config_hash);
    assert.equal(replicas[0]?.matches_desired, true);
    assert.ok(!Number.isNaN(Date.parse(replicas[0]?.checked_at ?? '')));
    assert.equal(body['resources'], null);
    assert.equal(body['cluster_error'], null);
    assert.deepEqual(body['request_log'], { bodies: false });
  });

  test('an admin key sees its own workspace; org_admin sees every workspace', async () => {
    type Seen = { workspace: string | null; providers: Array<{ slug: string }>; configs: Array<{ id: string }>; api_keys: Array<{ id: string }> };
    const seen = async (key: string): Promise<Seen> => JSON.parse((await get(on, '/v1/configuration', key)).text) as Seen;
    const teamB = await seen(TEAM_B_ADMIN);
    assert.equal(teamB.workspace, 'team-b');
    assert.deepEqual(teamB.providers.map((provider) => provider.slug), ['shared', 'team-b-only']);
    assert.deepEqual(teamB.configs.map((config) => config.id), ['b-config']);
    assert.deepEqual(teamB.api_keys.map((key) => key.id), ['team-b-admin']);
    const org = await seen(ORG_ADMIN);
    assert.equal(org.workspace, null);
    assert.deepEqual(org.providers.map((provider) => provider.slug), ['shared', 'team-a-only', 'team-b-only']);
    assert.deepEqual(org.configs.map((config) => config.id), ['a-config', 'b-config']);
    assert.equal(org.api_keys.length, 5);
  });
});

describe('the request log', () => {
  test('reading the configuration is not written to the request log (a console polls it); other /v1 calls are', async () => {
    assert.equal((await get(on, '/v1/configuration', TEST_GATEWAY_KEY)).status, 200);
    assert.equal((await get(on, '/v1/models', TEST_GATEWAY_KEY)).status, 200);
    await eventually(() => records.some((record) => record.route === '/v1/models'), 'the /v1/models record');
    assert.deepEqual(records.filter((record) => record.route === '/v1/configuration'), []);
  });
});

describe('redact', () => {
  test('replaces credential-looking fields at any depth and keeps the rest', () => {
    const input = {
      provider: 'bedrock',
      api_key: 'sk-1',
      aws_secret_access_key: 'x',
      aws_session_token: 'y',
      aws_access_key_id: 'z',
      Authorization: 'Bearer t',
      vertex_service_account_json: { private_key: 'k' },
      override_params: { model: 'm', max_tokens: 10 },
      targets: [{ virtual_key: 'vk', weight: 1 }],
      checks: [{ id: 'default.webhook', parameters: { webhookURL: 'https://hooks.example', headers: { 'x-token': 'secret' } } }],
    };
    assert.deepEqual(redact(input), {
      provider: 'bedrock',
      api_key: REDACTED,
      aws_secret_access_key: REDACTED,
      aws_session_token: REDACTED,
      aws_access_key_id: REDACTED,
      Authorization: REDACTED,
      vertex_service_account_json: REDACTED,
      override_params: { model: 'm', max_tokens: 10 },
      targets: [{ virtual_key: REDACTED, weight: 1 }],
      checks: [{ id: 'default.webhook', parameters: { webhookURL: 'https://hooks.example', headers: { 'x-token': REDACTED } } }],
    });
  });
});
