import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatConfigIssues, MAX_TARGET_DEPTH, parseRoutingConfig } from '../../../proxy/config/routing-config-validation.ts';
import { CONFIG_KEY_SETS } from '../../../proxy/config/routing-config-rules.ts';
import type { RoutingConfig } from '../../../proxy/config/routing-config-schema.ts';

const leaf = { provider: 'openai', api_key: 'sk-test' } as const;
const hook = { id: 'h1', type: 'guardrail', checks: [{ id: 'default.regexMatch', parameters: { rule: 'x' } }] };

function issuesOf(input: unknown): string[] {
  const result = parseRoutingConfig(input);
  assert.equal(result.success, false, `expected ${JSON.stringify(input)} to be rejected`);
  return result.success ? [] : result.issues;
}

function assertValid(input: unknown): RoutingConfig {
  const result = parseRoutingConfig(input);
  assert.ok(result.success, `expected valid, got: ${result.success ? '' : formatConfigIssues(result.issues)}`);
  return result.config;
}

function nested(depth: number): Record<string, unknown> {
  let node: Record<string, unknown> = { provider: '@saved' };
  for (let level = 0; level < depth; level++) node = { strategy: { mode: 'fallback' }, targets: [node] };
  return node;
}

describe('parseRoutingConfig accepts each of the 18 key sets', () => {
  const samples: Record<string, unknown>[] = [
    { provider: 'openai', api_key: 'sk-1' },
    { provider: 'ollama', custom_host: 'http://ollama.local:11434/v1' },
    { virtual_key: 'vk-openai-prod' },
    { strategy: { mode: 'loadbalance' }, targets: [{ ...leaf, weight: 0.7 }, { virtual_key: 'vk-b', weight: 0.3 }] },
    { cache: { mode: 'simple' } },
    { retry: { attempts: 3 } },
    { prompt_id: 'welcome' },
    { forward_headers: ['x-trace'] },
    { request_timeout: 10_000 },
    { provider: 'cloudC-runtime', cloudC_access_key_id: 'AKIA', cloudC_secret_access_key: 's3cr3t' },
    { provider: 'cloudB-ai', cloudB_region: 'us-central1', cloudB_service_account_json: { type: 'service_account' } },
    { provider: 'cloudB-ai', cloudB_region: 'us-central1', cloudB_project_id: 'my-project' },
    {
      provider: 'cloudA-foundry',
      cloudA_deployment_name: 'gpt',
      cloudA_deployment_type: 'managed',
      cloudA_region: 'eastus',
      cloudA_api_version: '2024-05-01',
    },
    { provider: 'cloudA-foundry', cloudA_endpoint_name: 'ep', cloudA_deployment_type: 'serverless' },
    { after_request_hooks: [{ ...hook, async: true }] },
    { before_request_hooks: [hook] },
    { input_guardrails: ['no-pii'] },
    { output_guardrails: [{ 'default.contains': { words: ['x'] }, deny: true }] },
  ];

  it('has one sample per key set', () => assert.equal(samples.length, CONFIG_KEY_SETS.length));
  samples.forEach((sample, index) => {
    it(`key set ${index + 1}: ${CONFIG_KEY_SETS[index]?.join(' + ')}`, () => {
      assert.deepEqual(assertValid(sample), sample);
    });
  });
});

describe('parseRoutingConfig accepts our readings of the spec', () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['a saved provider slug alone', { provider: '@openai-prod' }],
    ['a provider with Authorization', { provider: 'cloudA-openai', cloudA_resource_name: 'r', Authorization: 'Bearer tok' }],
    ['a target inheriting custom_host', { strategy: { mode: 'fallback' }, custom_host: 'https://llm.internal', targets: [{ provider: 'vllm' }] }],
    ['single mode with one target', { strategy: { mode: 'single' }, targets: [leaf] }],
    ['fallback with strategy.on_status_codes', { strategy: { mode: 'fallback', on_status_codes: [429, 503] }, targets: [leaf, { virtual_key: 'vk' }] }],
    [
      'conditional with named targets',
      {
        strategy: { mode: 'conditional', conditions: [{ query: { 'metadata.tier': { $eq: 'pro' } }, then: 'big' }], default: 'small' },
        targets: [{ ...leaf, name: 'big' }, { virtual_key: 'vk', name: 'small' }],
      },
    ],
    ['guardrail extensions', { input_guardrails: [{ id: 'g', async: false, sequential: true, fail_on_error: false, on_fail: { feedback: { value: -1, weight: 1, metadata: {} } } }] }],
    ['hook extensions', { before_request_hooks: [{ ...hook, deny: true, sequential: true, fail_on_error: true, on_fail: { deny: true, feedback: { value: 1 } } }] }],
  ];
  for (const [name, config] of cases) it(name, () => assert.deepEqual(assertValid(config), config));

  it('accepts every key of the spec at once', () => {
    const config = {
      ...leaf,
      name: 'everything',
      custom_host: 'https://api.example.com/v1',
      strict_vendorA_compliance: true,
      resource_name: 'res',
      deployment_id: 'dep',
      api_version: '2024-02-01',
      deployments: [{ deployment_id: 'd', alias: 'gpt', api_version: 'v', is_default: true }],
      override_params: { model: 'gpt-4o-mini', temperature: 0.2 },
      prompt_id: 'p',
      request_timeout: 5000,
      cache: { mode: 'semantic', max_age: 3600 },
      retry: { attempts: 5, on_status_codes: [429], use_retry_after_headers: true },
      cb_config: { failure_threshold: 3, cooldown_interval: 30_000, failure_status_codes: [500, 502] },
      weight: 0,
      on_status_codes: [500],
      forward_headers: ['x-user'],
      before_request_hooks: [hook],
      after_request_hooks: [{ ...hook, async: true, on_success: { feedback: { value: 1 } } }],
      input_guardrails: ['g1'],
      output_guardrails: [{ id: 'g2', on_fail: { deny: true } }],
      vendorA_organization: 'org',
      vendorA_project: 'proj',
      cloudB_project_id: 'p',
      cloudB_region: 'r',
      cloudB_service_account_json: {},
      cloudA_region: 'r',
      cloudA_deployment_name: 'd',
      cloudA_endpoint_name: 'e',
      cloudA_api_version: 'v',
      cloudA_deployment_type: 'serverless',
      cloudA_resource_name: 'r',
      cloudA_deployment_id: 'd',
      cloudA_model_name: 'm',
      cloudC_access_key_id: 'a',
      cloudC_secret_access_key: 's',
      cloudC_region: 'r',
      cloudC_session_token: 't',
      Authorization: 'Bearer tok',
    };
    assert.deepEqual(assertValid(config), config);
  });

  it('accepts targets nested 3 levels deep', () => {
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        {
          strategy: { mode: 'loadbalance' },
          targets: [{ strategy: { mode: 'single' }, targets: [{ ...leaf, retry: { attempts: 1 } }] }, { virtual_key: 'vk' }],
        },
        { provider: '@backup' },
      ],
    };
    assert.deepEqual(assertValid(config), config);
    assert.ok(assertValid(nested(MAX_TARGET_DEPTH)));
  });
});

// [description, config, expected issue]
const violations: Array<[string, unknown, string]> = [
  // Unknown keys, at every level.
  ['unknown root key', { retry: { attempts: 1 }, foo: 1 }, 'foo: unknown key'],
  ['unknown key in a target', { strategy: { mode: 'fallback' }, targets: [leaf, { ...leaf, bar: true }] }, 'targets[1].bar: unknown key'],
  ['unknown strategy key', { strategy: { mode: 'fallback', retries: 2 }, targets: [leaf] }, 'strategy.retries: unknown key'],
  ['unknown cache key', { cache: { mode: 'simple', ttl: 5 } }, 'cache.ttl: unknown key'],
  ['unknown retry key', { retry: { attempts: 1, backoff: 'x' } }, 'retry.backoff: unknown key'],
  ['unknown cb_config key', { ...leaf, cb_config: { failure_threshold: 1, cooldown_interval: 30_000, x: 1 } }, 'cb_config.x: unknown key'],
  ['unknown deployment key', { ...leaf, deployments: [{ deployment_id: 'd', alias: 'a', api_version: 'v', x: 1 }] }, 'deployments[0].x: unknown key'],
  ['unknown hook key', { before_request_hooks: [{ id: 'h', x: 1 }] }, 'before_request_hooks[0].x: unknown key'],
  ['unknown hook check key', { before_request_hooks: [{ id: 'h', checks: [{ id: 'c', parameters: {}, x: 1 }] }] }, 'before_request_hooks[0].checks[0].x: unknown key'],
  // Strategy.
  ['strategy without mode', { strategy: {}, targets: [leaf] }, 'strategy.mode: Required'],
  ['unknown strategy mode', { strategy: { mode: 'random' }, targets: [leaf] }, 'strategy.mode: must be one of single, loadbalance, fallback, conditional'],
  ['conditional without conditions', { strategy: { mode: 'conditional', default: 'a' }, targets: [{ ...leaf, name: 'a' }] }, 'strategy.conditions: Required when strategy.mode is conditional'],
  ['conditional with empty conditions', { strategy: { mode: 'conditional', conditions: [], default: 'a' }, targets: [{ ...leaf, name: 'a' }] }, 'strategy.conditions: must not be empty'],
  ['conditional without default', { strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'a' }] }, targets: [{ ...leaf, name: 'a' }] }, 'strategy.default: Required when strategy.mode is conditional'],
  ['condition without query', { strategy: { mode: 'conditional', conditions: [{ then: 'a' }], default: 'a' }, targets: [{ ...leaf, name: 'a' }] }, 'strategy.conditions[0].query: Required'],
  ['condition without then', { strategy: { mode: 'conditional', conditions: [{ query: {} }], default: 'a' }, targets: [{ ...leaf, name: 'a' }] }, 'strategy.conditions[0].then: Required'],
  ['then names no target', { strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'b' }], default: 'a' }, targets: [{ ...leaf, name: 'a' }] }, "strategy.conditions[0].then: must be the name of one of this config's targets (known: a)"],
  ['default names no target', { strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'a' }], default: 'z' }, targets: [{ ...leaf, name: 'a' }] }, "strategy.default: must be the name of one of this config's targets (known: a)"],
  ['duplicate target names in conditional', { strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'a' }], default: 'a' }, targets: [{ ...leaf, name: 'a' }, { ...leaf, name: 'a' }] }, 'targets[1].name: duplicate target name "a" in a conditional strategy'],
  ['strategy.on_status_codes outside fallback', { strategy: { mode: 'loadbalance', on_status_codes: [503] }, targets: [leaf] }, 'strategy.on_status_codes: only allowed when strategy.mode is fallback'],
  // Targets.
  ['strategy without targets', { strategy: { mode: 'fallback' } }, 'targets: Required when strategy is used'],
  ['single strategy without targets', { ...leaf, strategy: { mode: 'single' } }, 'targets: Required when strategy is used'],
  ['empty targets', { strategy: { mode: 'fallback' }, targets: [] }, 'targets: must not be empty'],
  ['targets without strategy', { ...leaf, targets: [leaf] }, 'strategy: Required when targets are used'],
  ['target that is not an object', { strategy: { mode: 'fallback' }, targets: [leaf, 'openai'] }, 'targets[1]: must be an object'],
  ['target without a provider', { strategy: { mode: 'fallback' }, targets: [{ override_params: { model: 'x' } }] }, 'targets[0].provider: Required in a target without strategy or virtual_key'],
  ['nested retry without attempts', { strategy: { mode: 'fallback' }, targets: [leaf, { ...leaf, retry: {} }] }, 'targets[1].retry.attempts: Required'],
  ['issue two levels down', { strategy: { mode: 'fallback' }, targets: [leaf, { strategy: { mode: 'single' }, targets: [{ ...leaf, cache: {} }] }] }, 'targets[1].targets[0].cache.mode: Required'],
  // Validity and credentials.
  ['no key set at all', { name: 'x', weight: 1 }, 'config: must contain one of: provider + api_key, provider + custom_host, virtual_key, strategy + targets, cache, retry, prompt_id, forward_headers, request_timeout, provider + cloudC_access_key_id + cloudC_secret_access_key, provider + cloudB_region + cloudB_service_account_json, provider + cloudB_region + cloudB_project_id, provider + cloudA_deployment_name + cloudA_deployment_type + cloudA_region + cloudA_api_version, provider + cloudA_endpoint_name + cloudA_deployment_type, after_request_hooks, before_request_hooks, input_guardrails, output_guardrails (or provider as an @slug of a saved provider)'],
  ['plain provider without credentials', { provider: 'openai' }, 'api_key: Required when provider is a plain provider name'],
  ['plain provider with partial cloud credentials', { provider: 'cloudC-runtime', cloudC_access_key_id: 'a' }, 'api_key: Required when provider is a plain provider name'],
  ['plain provider without credentials in a target', { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai' }] }, 'targets[0].api_key: Required when provider is a plain provider name'],
  ['bare @ as provider', { provider: '@' }, 'provider: must be a provider name or an @slug of a saved provider'],
  ['empty api_key', { provider: 'openai', api_key: '' }, 'api_key: must not be empty'],
  // Types of config keys.
  ['request_timeout zero', { request_timeout: 0 }, 'request_timeout: must be at least 1'],
  ['request_timeout fractional', { request_timeout: 1.5 }, 'request_timeout: must be an integer'],
  ['request_timeout as a string', { request_timeout: '1000' }, 'request_timeout: must be a number'],
  ['negative weight', { ...leaf, weight: -1 }, 'weight: must be at least 0'],
  ['status code too low', { ...leaf, on_status_codes: [99] }, 'on_status_codes[0]: must be at least 100'],
  ['status code too high', { ...leaf, on_status_codes: [500, 600] }, 'on_status_codes[1]: must be at most 599'],
  ['forward_headers item not a string', { forward_headers: ['x-a', 1] }, 'forward_headers[1]: must be a string'],
  ['override_params as an array', { ...leaf, override_params: [] }, 'override_params: must be an object'],
  ['deployment without deployment_id', { ...leaf, deployments: [{ alias: 'a', api_version: 'v' }] }, 'deployments[0].deployment_id: Required'],
  ['deployment is_default not boolean', { ...leaf, deployments: [{ deployment_id: 'd', alias: 'a', api_version: 'v', is_default: 'yes' }] }, 'deployments[0].is_default: must be a boolean'],
  ['custom_host not http(s)', { provider: 'x', custom_host: 'ftp://files.local' }, 'custom_host: must be an absolute http(s) URL'],
  ['custom_host relative', { provider: 'x', custom_host: '/v1' }, 'custom_host: must be an absolute http(s) URL'],
  ['custom_host with credentials', { provider: 'x', custom_host: 'https://u:p@llm.local' }, 'custom_host: must not carry credentials, a query or a fragment'],
  ['cloudA_deployment_type unknown', { ...leaf, cloudA_deployment_type: 'dedicated' }, 'cloudA_deployment_type: must be one of serverless, managed'],
  ['cloudB_service_account_json not an object', { ...leaf, cloudB_service_account_json: '{}' }, 'cloudB_service_account_json: must be an object'],
  ['Authorization without Bearer', { provider: 'x', Authorization: 'Basic abc' }, 'Authorization: must have the form "Bearer <TOKEN>"'],
  ['strict_vendorA_compliance not boolean', { ...leaf, strict_vendorA_compliance: 'true' }, 'strict_vendorA_compliance: must be a boolean'],
  // Cache, retry, circuit breaker.
  ['cache without mode', { cache: {} }, 'cache.mode: Required'],
  ['unknown cache mode', { cache: { mode: 'fuzzy' } }, 'cache.mode: must be one of simple, semantic'],
  ['negative cache max_age', { cache: { mode: 'simple', max_age: -1 } }, 'cache.max_age: must be at least 0'],
  ['retry without attempts', { retry: {} }, 'retry.attempts: Required'],
  ['retry attempts above 5', { retry: { attempts: 6 } }, 'retry.attempts: must be at most 5'],
  ['retry attempts negative', { retry: { attempts: -1 } }, 'retry.attempts: must be at least 0'],
  ['retry status code out of range', { retry: { attempts: 1, on_status_codes: [700] } }, 'retry.on_status_codes[0]: must be at most 599'],
  ['retry use_retry_after_headers not boolean', { retry: { attempts: 1, use_retry_after_headers: 1 } }, 'retry.use_retry_after_headers: must be a boolean'],
  ['cb_config without failure_threshold', { ...leaf, cb_config: { cooldown_interval: 30_000 } }, 'cb_config.failure_threshold: Required'],
  ['cb_config failure_threshold below 1', { ...leaf, cb_config: { failure_threshold: 0, cooldown_interval: 30_000 } }, 'cb_config.failure_threshold: must be at least 1'],
  ['cb_config without cooldown_interval', { ...leaf, cb_config: { failure_threshold: 1 } }, 'cb_config.cooldown_interval: Required'],
  ['cb_config cooldown below 30000', { ...leaf, cb_config: { failure_threshold: 1, cooldown_interval: 1000 } }, 'cb_config.cooldown_interval: must be at least 30000'],
  ['cb_config failure_status_codes not integers', { ...leaf, cb_config: { failure_threshold: 1, cooldown_interval: 30_000, failure_status_codes: [500.5] } }, 'cb_config.failure_status_codes[0]: must be an integer'],
  // Hooks.
  ['hook without id', { before_request_hooks: [{ type: 'guardrail' }] }, 'before_request_hooks[0].id: Required'],
  ['hook that is not an object', { after_request_hooks: ['h1'] }, 'after_request_hooks[0]: must be an object'],
  ['hook check without parameters', { before_request_hooks: [{ id: 'h', checks: [{ id: 'c' }] }] }, 'before_request_hooks[0].checks[0].parameters: Required'],
  ['hook check without id', { before_request_hooks: [{ id: 'h', checks: [{ parameters: {} }] }] }, 'before_request_hooks[0].checks[0].id: Required'],
  ['hook feedback value not a number', { after_request_hooks: [{ id: 'h', on_success: { feedback: { value: 'good' } } }] }, 'after_request_hooks[0].on_success.feedback.value: must be a number'],
  ['hook feedback metadata not an object', { before_request_hooks: [{ id: 'h', on_fail: { feedback: { metadata: 'm' } } }] }, 'before_request_hooks[0].on_fail.feedback.metadata: must be an object'],
  ['before-request hook with async', { before_request_hooks: [{ id: 'h', async: true }] }, 'before_request_hooks[0].async: unknown key'],
  ['after-request hook outcome with deny', { after_request_hooks: [{ id: 'h', on_fail: { deny: true } }] }, 'after_request_hooks[0].on_fail.deny: unknown key'],
  ['before-request hook deny not boolean', { before_request_hooks: [{ id: 'h', on_fail: { deny: 'yes' } }] }, 'before_request_hooks[0].on_fail.deny: must be a boolean'],
  ['hook sequential not boolean', { before_request_hooks: [{ id: 'h', sequential: 'yes' }] }, 'before_request_hooks[0].sequential: must be a boolean'],
  // Guardrails.
  ['guardrail neither string nor object', { input_guardrails: [42] }, 'input_guardrails[0]: must be a string or an object'],
  ['guardrail empty id string', { input_guardrails: [''] }, 'input_guardrails[0]: must not be empty'],
  ['guardrail check that is not an object', { input_guardrails: [{ 'default.regexMatch': 'x' }] }, 'input_guardrails[0]["default.regexMatch"]: must be an object (a check id maps to its parameters)'],
  ['guardrail deny not boolean', { output_guardrails: [{ id: 'g', deny: 'yes' }] }, 'output_guardrails[0].deny: must be a boolean'],
  ['input guardrail outcome with deny', { input_guardrails: [{ id: 'g', on_fail: { deny: true } }] }, 'input_guardrails[0].on_fail.deny: unknown key'],
  ['guardrail async not boolean', { input_guardrails: [{ id: 'g', async: 'no' }] }, 'input_guardrails[0].async: must be a boolean'],
  // Shape of the whole input.
  ['null', null, 'config: must be an object'],
  ['array', [], 'config: must be an object'],
  ['string', 'my-saved-config', 'config: must be an object'],
  ['undefined', undefined, 'config: must be an object'],
  ['too deep', nested(MAX_TARGET_DEPTH + 1), `${'targets[0].'.repeat(MAX_TARGET_DEPTH)}targets: must not nest more than ${MAX_TARGET_DEPTH} levels deep`],
];

describe('parseRoutingConfig rejects', () => {
  for (const [name, config, expected] of violations) {
    it(`${name} → ${expected.split(':')[0]}`, () => {
      const issues = issuesOf(config);
      assert.ok(issues.includes(expected), `expected "${expected}" in:\n  ${issues.join('\n  ')}`);
    });
  }
});

describe('parseRoutingConfig reporting', () => {
  it('reports every problem at once, structural and cross-key', () => {
    const issues = issuesOf({
      strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'nope' }] },
      targets: [{ ...leaf, name: 'a', retry: { attempts: 9 } }, { provider: 'openai' }],
      request_timeout: 1.5,
      foo: 1,
    });
    assert.deepEqual(
      [...issues].sort(),
      [
        'foo: unknown key',
        'request_timeout: must be an integer',
        'strategy.conditions[0].then: must be the name of one of this config\'s targets (known: a)',
        'strategy.default: Required when strategy.mode is conditional',
        'targets[0].retry.attempts: must be at most 5',
        'targets[1].api_key: Required when provider is a plain provider name',
      ].sort(),
    );
  });

  it('never throws, even on hostile inputs', () => {
    const cyclic: Record<string, unknown> = { strategy: { mode: 'fallback' } };
    cyclic['targets'] = [cyclic];
    const throwing = Object.defineProperty({}, 'retry', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    let veryDeep: unknown = leaf;
    for (let level = 0; level < 100_000; level++) veryDeep = { strategy: { mode: 'single' }, targets: [veryDeep] };
    for (const input of [cyclic, throwing, veryDeep, 42, Symbol('x'), () => ({})]) {
      assert.equal(parseRoutingConfig(input).success, false);
    }
  });

  it('formatConfigIssues joins issues for one message', () => {
    assert.equal(formatConfigIssues(['a: Required', 'b.c: unknown key']), 'a: Required; b.c: unknown key');
    assert.equal(formatConfigIssues(issuesOf({ retry: { attempts: 7 }, cache: {} })), 'cache.mode: Required; retry.attempts: must be at most 5');
  });
});
