// renderGatewayState: golden cases, and the output always loads in the proxy.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { authenticateApiKey } from '../../proxy/auth/api-key-auth.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { CredentialsSchema, GatewayStateSchema } from '../../proxy/config/state-schema.ts';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import type { GatewayResources, RenderedStatus } from '../../operator/reconcile/resource-types.ts';
import { ADMIN_KEY, exampleSet, resource, resources, secret } from './resource-fixtures.ts';

function conditionsOf(result: RenderResult, kind: string, name: string): Record<string, { status: string; reason: string }> {
  const status = result.statuses.find((candidate) => candidate.kind === kind && candidate.name === name);
  assert.ok(status !== undefined, `no status for ${kind}/${name}`);
  return Object.fromEntries(status.conditions.map((condition) => [condition.type, { status: condition.status, reason: condition.reason }]));
}

/** Loads the serialized output exactly as the proxy does; fails the test when it would reject it. */
function loadInProxy(result: RenderResult): NonNullable<Extract<ReturnType<typeof loadStateFromTexts>, { ok: true }>['state']> {
  const texts = serializeRenderedState(result);
  const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
  assert.ok(loaded.ok, `proxy rejected the rendered state: ${loaded.ok ? '' : loaded.errors.join('; ')}`);
  assert.deepEqual(loaded.warnings, []);
  assert.equal(loaded.state.hash, texts.hash);
  return loaded.state;
}

const READY = { Accepted: { status: 'True', reason: 'Accepted' }, ResolvedRefs: { status: 'True', reason: 'ResolvedRefs' }, Ready: { status: 'True', reason: 'Rendered' } };

describe('renderGatewayState', () => {
  test('the examples render to exactly the expected state and credentials documents', () => {
    const result = renderGatewayState(exampleSet());
    assert.deepEqual(result.state, {
      apiKeys: [
        {
          id: 'platform-admin',
          keyHash: 'sha256:b2133467da6082b8719bb0311769d006e2c10d1ec8739c58077317100eb916be',
          workspace: 'default',
          scopes: ['inference', 'admin'],
        },
      ],
      providers: [
        { slug: 'openai-backup', provider: 'openai', customHost: 'http://backup.internal:8080/v1' },
        { slug: 'openai-prod', provider: 'openai', virtualKey: 'vk-openai-prod' },
      ],
      configs: [
        {
          id: 'support-fallback',
          config: {
            strategy: { mode: 'fallback', on_status_codes: [429, 500, 502, 503] },
            targets: [
              { provider: '@openai-prod', override_params: { model: 'gpt-4o' } },
              { provider: '@openai-backup', override_params: { model: 'gpt-4o-mini' } },
            ],
          },
        },
      ],
      prompts: [
        {
          id: 'welcome',
          model: 'gpt-4o-mini',
          messages: [{ role: 'system', content: 'You are {{tone}}.' }, { role: 'user', content: '{{question}}' }],
          parameters: { temperature: 0.2 },
        },
      ],
      guardrails: [{ id: 'no-pii', checks: [{ id: 'default.regexMatch', parameters: { rule: '\\d{3}-\\d{2}-\\d{4}' } }], deny: true }],
      rateLimitPolicies: [
        {
          id: 'per-workspace',
          type: 'requests',
          unit: 'rpm',
          value: 600,
          status: 'active',
          conditions: [{ key: 'workspace_id', value: 'default' }],
          group_by: [{ key: 'api_key' }],
          created_at: result.state.rateLimitPolicies[0]?.created_at,
          last_updated_at: result.state.rateLimitPolicies[0]?.created_at,
        },
      ],
      egress: { allow: ['127.0.0.0/8'], clientAllow: [] },
    });
    // A trailing newline in a Secret value (kubectl create secret --from-file) is dropped.
    assert.deepEqual(result.credentials, { providers: { 'openai-backup': { apiKey: 'sk-backup-0000' }, 'openai-prod': { apiKey: 'sk-prod-0000' } }, apiKeys: {} });
    for (const status of result.statuses) assert.deepEqual(conditionsOf(result, status.kind, status.name), READY, `${status.kind}/${status.name}`);
    assert.ok(GatewayStateSchema.safeParse(result.state).success);
    assert.ok(CredentialsSchema.safeParse(result.credentials).success);
  });

  test('the rendered documents load in the proxy: provider keys come from the Secret, the API key authenticates', () => {
    const state = loadInProxy(renderGatewayState(exampleSet()));
    assert.equal(state.providersBySlug.get('openai-prod')?.apiKey, 'sk-prod-0000');
    assert.equal(state.providersByVirtualKey.get('vk-openai-prod')?.slug, 'openai-prod');
    assert.ok(state.configs.has('support-fallback'));
    assert.ok(state.prompts.has('welcome'));
    const key = authenticateApiKey(state, ADMIN_KEY, 'admin');
    assert.equal(key.id, 'platform-admin');
    // Neither document holds the gateway key itself.
    const texts = serializeRenderedState(renderGatewayState(exampleSet()));
    assert.ok(!texts.stateYaml.includes(ADMIN_KEY) && !texts.credentialsYaml.includes(ADMIN_KEY));
    assert.ok(!texts.stateYaml.includes('sk-prod-0000'), 'provider keys live only in the credentials document');
  });

  test('a Provider whose Secret is missing is left out with ResolvedRefs=False/SecretNotFound; the rest still renders', () => {
    const set = exampleSet();
    const broken: GatewayResources = { ...set, secrets: set.secrets.filter((item) => item.metadata.name !== 'openai') };
    const result = renderGatewayState(broken);
    assert.deepEqual(result.state.providers, []);
    assert.deepEqual(conditionsOf(result, 'Provider', 'openai-prod'), {
      Accepted: { status: 'True', reason: 'Accepted' },
      ResolvedRefs: { status: 'False', reason: 'SecretNotFound' },
      Ready: { status: 'False', reason: 'SecretNotFound' },
    });
    // The config that uses it is still served (its other targets may work) but says why it is not Ready.
    assert.deepEqual(conditionsOf(result, 'GatewayConfig', 'support-fallback'), {
      Accepted: { status: 'True', reason: 'Accepted' },
      ResolvedRefs: { status: 'False', reason: 'ProviderNotFound' },
      Ready: { status: 'False', reason: 'ProviderNotFound' },
    });
    assert.equal(result.state.configs.length, 1);
    assert.deepEqual(conditionsOf(result, 'Prompt', 'welcome'), READY);
    assert.equal(result.state.apiKeys.length, 1);
    loadInProxy(result);
  });

  test('a Secret without the referenced key: SecretKeyNotFound', () => {
    const result = renderGatewayState(
      resources([resource('Provider', 'p', { provider: 'openai', apiKeySecretRef: { name: 's', key: 'missing' } })], [secret('s', { other: 'x' }, 'provider')]),
    );
    assert.equal(conditionsOf(result, 'Provider', 'p')['ResolvedRefs']?.reason, 'SecretKeyNotFound');
    assert.deepEqual(result.state.providers, []);
  });

  test('invalid specs are rejected with Accepted=False and never reach the state', () => {
    const result = renderGatewayState(
      resources([
        resource('RateLimitPolicy', 'bad-unit', { type: 'requests', unit: 'rps', value: 1, conditions: [{ key: 'model', value: 'x' }], group_by: [{ key: 'api_key' }] }),
        resource('Prompt', 'bad-template', { messages: [{ role: 'user', content: '{{#open}}' }] }),
        resource('GatewayConfig', 'bad-retry', { provider: 'openai', retry: { attempts: 9 } }),
        resource('GatewayAPIKey', 'neither', { scopes: ['inference'] }),
        resource('GatewayAPIKey', 'both', { keyHash: `sha256:${'a'.repeat(64)}`, keySecretRef: { name: 'k', key: 'k' } }),
        resource('Provider', 'UPPER_and_way_too_long_for_a_slug_because_slugs_stop_at_sixty_three_chars', { provider: 'openai' }),
        resource('Prompt', 'good', { messages: [{ role: 'user', content: 'hi' }] }),
      ]),
    );
    assert.equal(conditionsOf(result, 'RateLimitPolicy', 'bad-unit')['Accepted']?.reason, 'InvalidSpec');
    assert.equal(conditionsOf(result, 'Prompt', 'bad-template')['Accepted']?.reason, 'InvalidSpec');
    assert.equal(conditionsOf(result, 'GatewayConfig', 'bad-retry')['Accepted']?.reason, 'InvalidConfig');
    assert.equal(conditionsOf(result, 'GatewayAPIKey', 'neither')['Accepted']?.reason, 'InvalidSpec');
    assert.equal(conditionsOf(result, 'GatewayAPIKey', 'both')['Accepted']?.reason, 'InvalidSpec');
    assert.equal(conditionsOf(result, 'Provider', 'UPPER_and_way_too_long_for_a_slug_because_slugs_stop_at_sixty_three_chars')['Accepted']?.reason, 'InvalidName');
    assert.deepEqual(result.state.prompts.map((prompt) => prompt.id), ['good']);
    assert.deepEqual([result.state.rateLimitPolicies, result.state.configs, result.state.apiKeys, result.state.providers], [[], [], [], []]);
    const message = result.statuses.find((status) => status.name === 'bad-unit')?.conditions[0]?.message ?? '';
    assert.match(message, /spec\.unit/);
    loadInProxy(result);
  });

  test('credentials inline in a GatewayConfig (at any depth) or in Provider options are refused', () => {
    const deep = { strategy: { mode: 'fallback' }, targets: [{ strategy: { mode: 'single' }, targets: [{ provider: 'openai', api_key: 'sk-inline' }] }] };
    const result = renderGatewayState(
      resources([
        resource('GatewayConfig', 'inline', deep),
        resource('Provider', 'bedrock', { provider: 'bedrock', options: { region: 'us-east-1', secretAccessKey: 'x' } }),
      ]),
    );
    assert.equal(conditionsOf(result, 'GatewayConfig', 'inline')['Accepted']?.reason, 'InlineCredentials');
    assert.match(result.statuses.find((status) => status.name === 'inline')?.conditions[0]?.message ?? '', /targets\[0\]\.targets\[0\]\.api_key/);
    assert.equal(conditionsOf(result, 'Provider', 'bedrock')['Accepted']?.reason, 'InlineCredentials');
    assert.ok(!JSON.stringify(result.state).includes('sk-inline'));
  });

  test('when two resources claim the same virtual key or gateway key, the older one keeps it', () => {
    const result = renderGatewayState(
      resources(
        [
          resource('Provider', 'newer', { provider: 'openai', virtualKey: 'vk' }, { created: '2025-02-01T00:00:00Z' }),
          resource('Provider', 'older', { provider: 'openai', virtualKey: 'vk' }, { created: '2025-01-01T00:00:00Z' }),
          resource('GatewayAPIKey', 'a', { keySecretRef: { name: 'k', key: 'a' } }, { created: '2025-01-01T00:00:00Z' }),
          resource('GatewayAPIKey', 'b', { keyHash: `sha256:${'ab'.repeat(32)}` }, { created: '2025-01-02T00:00:00Z' }),
          resource('GatewayAPIKey', 'c', { keySecretRef: { name: 'k', key: 'c' } }, { created: '2025-01-03T00:00:00Z' }),
        ],
        [secret('k', { a: 'same-key-123', c: 'same-key-123' }, 'gateway-key')],
      ),
    );
    assert.deepEqual(result.state.providers.map((provider) => provider.slug), ['older']);
    assert.equal(conditionsOf(result, 'Provider', 'newer')['Accepted']?.reason, 'DuplicateVirtualKey');
    assert.deepEqual(result.state.apiKeys.map((key) => key.id), ['a', 'b']);
    assert.equal(conditionsOf(result, 'GatewayAPIKey', 'c')['Accepted']?.reason, 'DuplicateKey');
    loadInProxy(result);
  });

  test('${NAME} in resource text stays literal: the proxy does not substitute it', () => {
    const result = renderGatewayState(
      resources([resource('Prompt', 'shell', { messages: [{ role: 'user', content: 'Echo ${HOME} and $${X} and {{name}}' }] })]),
    );
    const state = loadInProxy(result);
    assert.equal(state.prompts.get('shell')?.messages[0]?.content, 'Echo ${HOME} and $${X} and {{name}}');
  });

  test('the output is deterministic: input order does not change the YAML or the hash', () => {
    const set = exampleSet();
    const reversed: GatewayResources = {
      ...set,
      resources: Object.fromEntries(Object.entries(set.resources).map(([kind, list]) => [kind, [...list].reverse()])) as unknown as GatewayResources['resources'],
      secrets: [...set.secrets].reverse(),
    };
    assert.deepEqual(serializeRenderedState(renderGatewayState(reversed)), serializeRenderedState(renderGatewayState(set)));
  });

  test('deleting a resource removes it from the rendered state and changes the hash', () => {
    const set = exampleSet();
    const before = serializeRenderedState(renderGatewayState(set));
    const without: GatewayResources = { ...set, resources: { ...set.resources, Prompt: [] } };
    const result = renderGatewayState(without);
    assert.deepEqual(result.state.prompts, []);
    assert.ok(!result.statuses.some((status: RenderedStatus) => status.kind === 'Prompt'));
    assert.notEqual(serializeRenderedState(result).hash, before.hash);
  });

  test('statuses carry the generation and name every resource once', () => {
    const set = exampleSet();
    const result = renderGatewayState(set);
    const total = Object.values(set.resources).reduce((sum, list) => sum + list.length, 0);
    assert.equal(result.statuses.length, total);
    for (const status of result.statuses) assert.equal(status.generation, 1);
  });
});
