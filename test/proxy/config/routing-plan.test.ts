import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileRoutingPlan, inheritSettings } from '../../../proxy/config/routing-plan.ts';
import { pickLoadBalancedChild } from '../../../proxy/routing/pick-load-balanced-target.ts';
import { seededRandom } from '../../helpers/gateway-harness.ts';
import { PlanCompileError } from '../../../proxy/errors.ts';

describe('inheritance parent → child', () => {
  const parent = {
    retry: { attempts: 2 },
    cache: { mode: 'simple' as const },
    request_timeout: 1000,
    custom_host: 'http://parent.example/v1',
    forward_headers: ['x-a'],
    cb_config: { failure_threshold: 2, cooldown_interval: 30_000 },
    before_request_hooks: [{ id: 'h1' }],
    after_request_hooks: [{ id: 'h2' }],
    input_guardrails: ['g1'],
    output_guardrails: ['g2'],
    override_params: { temperature: 0.1, model: 'parent-model' },
  };

  const INHERITED = ['retry', 'cache', 'request_timeout', 'custom_host', 'forward_headers', 'cb_config', 'before_request_hooks', 'after_request_hooks', 'input_guardrails', 'output_guardrails'] as const;
  for (const key of INHERITED) {
    test(`${key} is inherited unless the child sets its own`, () => {
      const inherited = inheritSettings(parent, { provider: 'openai', api_key: 'k' });
      assert.deepEqual(inherited[key], parent[key]);
      const own = { provider: 'openai', api_key: 'k', [key]: key === 'request_timeout' ? 5 : key === 'custom_host' ? 'http://child/v1' : key === 'retry' ? { attempts: 0 } : key === 'cache' ? { mode: 'semantic' } : key === 'cb_config' ? { failure_threshold: 9, cooldown_interval: 60_000 } : ['child'] };
      assert.deepEqual(inheritSettings(parent, own)[key], own[key]);
    });
  }

  test('override_params merge, the child wins', () => {
    const merged = inheritSettings(parent, { provider: 'openai', api_key: 'k', override_params: { model: 'child-model', top_p: 0.5 } });
    assert.deepEqual(merged.override_params, { temperature: 0.1, model: 'child-model', top_p: 0.5 });
  });

  test('credentials and weights are not inherited', () => {
    const merged = inheritSettings({ ...parent, provider: 'x', api_key: 'secret', weight: 5 }, { virtual_key: 'vk' });
    assert.equal(merged.api_key, undefined);
    assert.equal(merged.provider, undefined);
    assert.equal(merged.weight, undefined);
  });

  test('inheritance reaches grandchildren through the compiled plan', () => {
    const plan = compileRoutingPlan({
      strategy: { mode: 'fallback' },
      retry: { attempts: 3 },
      override_params: { a: 1 },
      targets: [{ strategy: { mode: 'loadbalance' }, override_params: { b: 2 }, targets: [{ provider: 'openai', api_key: 'k', override_params: { c: 3 } }] }],
    }, 'operator');
    const leaf = plan.children[0]?.children[0];
    assert.equal(leaf?.path, 'config.targets[0].targets[0]');
    assert.deepEqual(leaf?.settings.retry, { attempts: 3 });
    assert.deepEqual(leaf?.settings.override_params, { a: 1, b: 2, c: 3 });
  });

  test('fallback status codes: the target\'s own, else the strategy\'s', () => {
    const plan = compileRoutingPlan({
      strategy: { mode: 'fallback', on_status_codes: [429] },
      targets: [{ provider: 'openai', api_key: 'k' }, { provider: 'openai', api_key: 'k', on_status_codes: [500] }],
    }, 'operator');
    assert.deepEqual([...(plan.children[0]?.fallbackOn ?? [])], [429]);
    assert.deepEqual([...(plan.children[1]?.fallbackOn ?? [])], [500]);
  });

  test('conditional queries are compiled; a bad operator is a compile issue', () => {
    assert.throws(
      () =>
        compileRoutingPlan({
          strategy: { mode: 'conditional', conditions: [{ query: { 'metadata.x': { $bad: 1 } }, then: 'a' }], default: 'a' },
          targets: [{ name: 'a', provider: 'openai', api_key: 'k' }],
        }, 'request'),
      (error: unknown) => error instanceof PlanCompileError && /strategy\.conditions\[0\]\.query\.metadata\.x\.\$bad: unknown operator/.test(error.message),
    );
  });
});

describe('pickLoadBalancedChild', () => {
  test('weights shape the distribution; weight 0 is never picked', () => {
    const candidates = [
      { id: 'a', weight: 3 },
      { id: 'b', weight: 1 },
      { id: 'zero', weight: 0 },
    ];
    const random = seededRandom(42);
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const picked = pickLoadBalancedChild(candidates, random)?.id ?? 'none';
      counts.set(picked, (counts.get(picked) ?? 0) + 1);
    }
    assert.equal(counts.get('zero'), undefined);
    const share = (counts.get('a') ?? 0) / 4000;
    assert.ok(Math.abs(share - 0.75) < 0.03, `a got ${share}`);
  });

  test('default weight 1 splits evenly; all-zero picks nothing', () => {
    assert.equal(pickLoadBalancedChild([{ weight: 0 }, { weight: 0 }], Math.random), undefined);
    assert.equal(pickLoadBalancedChild([], Math.random), undefined);
    const edge = pickLoadBalancedChild([{ weight: 1, id: 'x' }, { weight: 0, id: 'y' }], () => 0.9999999999);
    assert.equal(edge?.id, 'x');
  });
});
