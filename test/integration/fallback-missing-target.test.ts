// Fallbacks survive a missing target: a Provider whose Secret went missing during a rotation
// is left out of the rendered state, and the GatewayConfig that names it first still answers
// from its next target. The skipped target is logged, counted and in the request's attempts;
// only when no target answers does the client see an error.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { load } from 'js-yaml';
import { renderGatewayState } from '../../operator/reconcile/render-gateway-state.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { resource, resources } from '../operator/resource-fixtures.ts';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

let mock: MockOpenAI;
let harness: Harness;
const records: RequestRecord[] = [];
let clock = 1_700_000_000_000;

/** The state the operator renders when the primary Provider's Secret is gone. */
function renderedDuringRotation(): Record<string, unknown> {
  const rendered = renderGatewayState(
    resources(
      [
        resource('Provider', 'primary', { provider: 'openai', apiKeySecretRef: { name: 'rotated-away', key: 'apiKey' } }),
        resource('Provider', 'backup', { provider: 'openai', customHost: mock.url, apiKeySecretRef: { name: 'backup-key', key: 'apiKey' } }),
        resource('GatewayConfig', 'prod', { strategy: { mode: 'fallback' }, targets: [{ provider: '@primary' }, { provider: '@backup' }] }),
        resource('GatewayConfig', 'spread', { strategy: { mode: 'loadbalance' }, targets: [{ provider: '@primary', weight: 9 }, { provider: '@backup', weight: 1 }] }),
        resource('GatewayConfig', 'only-missing', { strategy: { mode: 'fallback' }, targets: [{ provider: '@primary' }, { provider: '@primary', override_params: { model: 'gpt-4o' } }] }),
      ],
      [{ metadata: { name: 'backup-key', namespace: 'aigw', labels: { 'aigateway.dev/credential': 'provider' } }, data: { apiKey: Buffer.from('sk-backup-0123').toString('base64') } }],
      ['127.0.0.0/8'],
    ),
  );
  const prod = rendered.statuses.find((status) => status.kind === 'GatewayConfig' && status.name === 'prod');
  assert.equal(prod?.conditions.find((condition) => condition.type === 'ResolvedRefs')?.reason, 'ProviderNotFound');
  const texts = serializeRenderedState(rendered);
  const state = load(texts.stateYaml) as { providers: Array<{ slug: string; apiKey?: string }> };
  // The harness reads one file: the rendered Secret's provider keys go inline.
  const credentials = load(texts.credentialsYaml) as { providers: Record<string, { apiKey: string }> };
  for (const provider of state.providers) provider.apiKey = credentials.providers[provider.slug]?.apiKey;
  assert.deepEqual(state.providers.map((provider) => provider.slug), ['backup']);
  return { ...state, apiKeys: baseState()['apiKeys'] };
}

before(async () => {
  mock = await startMockOpenAI();
  // The harness draws 0.0 from random: a loadbalance would pick its first (missing) target.
  harness = await startHarness({ state: renderedDuringRotation(), random: () => 0, now: () => clock, requestSink: (record) => records.push(record) });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function chat(config: string): Promise<{ status: number; body: { choices?: unknown[]; error?: { code: string; message: string } } }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': config },
    body: JSON.stringify(CHAT),
  });
  return { status: response.status, body: (await response.json()) as { choices?: unknown[]; error?: { code: string; message: string } } };
}

async function unresolvedCount(config: string): Promise<number> {
  const metric = await harness.gateway.metrics.unresolvedTargets.get();
  return metric.values.find((value) => value.labels['config'] === config)?.value ?? 0;
}

describe('a fallback whose first target is missing', () => {
  test('answers from the next target; the skip is logged, counted and in the attempts', async () => {
    const before = await unresolvedCount('prod');
    const sent = mock.requests.length;
    const answer = await chat('prod');
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.ok(Array.isArray(answer.body.choices));
    assert.equal(mock.requests.length, sent + 1, 'the next target was called once');
    assert.equal(await unresolvedCount('prod'), before + 1);
    const warning = harness.logs.find((line) => line['msg'] === 'target skipped: it cannot be resolved' && line['config_id'] === 'prod');
    assert.equal(warning?.['target'], 'config.targets[0]');
    assert.equal(warning?.['error_code'], 'AIGW_ERR_UNKNOWN_PROVIDER');
    const record = records.filter((candidate) => candidate.configId === 'prod').at(-1);
    assert.equal(record?.status, 200);
    assert.equal(record?.provider, 'openai');
    assert.equal(record?.targetPath, 'config.targets[1]');
    assert.deepEqual(
      record?.attempts?.map(({ target, provider, status, errorCode, skipped }) => ({ target, provider, status, errorCode, skipped })),
      [
        { target: 'config.targets[0]', provider: '@primary', status: null, errorCode: 'AIGW_ERR_UNKNOWN_PROVIDER', skipped: 'unresolved' },
        { target: 'config.targets[1]', provider: 'openai', status: 200, errorCode: undefined, skipped: undefined },
      ],
    );
  });

  test('a request-written fallback skips a saved provider that does not exist', async () => {
    const inline = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@gone' }, { provider: '@backup' }] });
    const before = await unresolvedCount('inline');
    assert.equal((await chat(inline)).status, 200);
    assert.equal(await unresolvedCount('inline'), before + 1);
  });

  test('a loadbalance never picks the missing target: every request is answered', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await chat('spread')).status, 200);
  });

  test('only when every target is missing does the client see an error: the first target\'s', async () => {
    const answer = await chat('only-missing');
    assert.equal(answer.status, 404);
    assert.equal(answer.body.error?.code, 'AIGW_ERR_UNKNOWN_PROVIDER');
    assert.match(answer.body.error?.message ?? '', /@primary/);
  });

  test('a target skipped on every request is logged once per interval, with the count in between', async () => {
    const lines = (): Array<Record<string, unknown>> =>
      harness.logs.filter((line) => line['msg'] === 'target skipped: it cannot be resolved' && line['config_id'] === 'only-missing' && line['target'] === 'config.targets[1]');
    clock += 60_000;
    const before = lines().length;
    for (let i = 0; i < 3; i++) assert.equal((await chat('only-missing')).status, 404);
    assert.equal(lines().length, before + 1, 'three skips, one line');
    clock += 10_000;
    assert.equal((await chat('only-missing')).status, 404);
    assert.equal(lines().length, before + 2);
    assert.equal(lines().at(-1)?.['skipped_since_last_line'], 2);
  });
});
