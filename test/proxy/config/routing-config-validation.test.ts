import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatConfigIssues, MAX_TARGET_DEPTH, parseRoutingConfig } from '../../../proxy/config/routing-config-validation.ts';
import { CONFIG_KEY_SETS } from '../../../proxy/config/routing-config-rules.ts';
import type { RoutingConfig } from '../../../proxy/config/routing-config-schema.ts';
import { CONFIG_VIOLATIONS, hook, KEY_SET_SAMPLES, leaf, nested } from '../../fixtures/routing-config-cases.ts';


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


describe('parseRoutingConfig accepts each of the 18 key sets', () => {

  it('has one sample per key set', () => assert.equal(KEY_SET_SAMPLES.length, CONFIG_KEY_SETS.length));
  KEY_SET_SAMPLES.forEach((sample, index) => {
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


describe('parseRoutingConfig rejects', () => {
  for (const [name, config, expected] of CONFIG_VIOLATIONS) {
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
