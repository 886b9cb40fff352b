// A configuration that validates is one that works: each state below would fail every request
// that reaches the broken part, so `validate`, the start, a hot reload and the operator all
// refuse it with the path and a did-you-mean hint — and a refused reload keeps the last good
// state serving and counts as a failure.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { renderGatewayState, type RenderResult } from '../../operator/reconcile/render-gateway-state.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { resource, resources } from '../operator/resource-fixtures.ts';

const CLI = fileURLToPath(new URL('../../bin/aigateway.js', import.meta.url));

let mock: MockOpenAI;
let dir: string;
before(async () => {
  mock = await startMockOpenAI();
  dir = await mkdtemp(join(tmpdir(), 'aigw-validity-'));
});
after(async () => {
  await mock.close();
  await rm(dir, { recursive: true, force: true });
});

/** A working state: a saved provider and a fallback config over it. */
function goodState(extra: { providers?: unknown[]; configs?: unknown[] } = {}): Record<string, unknown> {
  return baseState({
    providers: [{ slug: 'backup', provider: 'openai', apiKey: 'sk-backup-0123', customHost: mock.url }, ...(extra.providers ?? [])],
    configs: extra.configs ?? [{ id: 'prod', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@backup' }, { provider: '@backup' }] } }],
  });
}

interface BadCase {
  readonly name: string;
  readonly state: () => Record<string, unknown>;
  /** The problem as every path reports it: the path, then the message with its hint. */
  readonly problem: RegExp;
}

const BAD_CASES: readonly BadCase[] = [
  {
    name: 'a target naming no saved provider',
    state: () => goodState({ configs: [{ id: 'prod', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@backup' }, { provider: '@bakup' }] } }] }),
    problem: /configs\.prod\.targets\[1\]\.provider: no saved provider "@bakup" \(did you mean "@backup"\?\)/,
  },
  {
    name: 'an unknown provider without a custom host',
    state: () => goodState({ providers: [{ slug: 'typo', provider: 'opena1', apiKey: 'sk-typo-0123' }] }),
    problem: /providers\.typo\.provider: unknown provider "opena1" \(did you mean "openai"\?\)/,
  },
  {
    name: 'an in-cluster host outside egress.allow',
    state: () => goodState({ providers: [{ slug: 'vllm', provider: 'vllm', customHost: 'http://vllm.ml.svc.cluster.local:8000/v1' }] }),
    problem: /providers\.vllm\.customHost: egress to vllm\.ml\.svc\.cluster\.local is denied: .*add "vllm\.ml\.svc\.cluster\.local" \(or its network\) to egress\.allow/,
  },
  {
    name: 'a private address outside egress.allow in a saved config',
    state: () => goodState({ configs: [{ id: 'prod', config: { provider: 'openai', api_key: 'sk-1', custom_host: 'http://10.20.30.40:8000/v1' } }] }),
    problem: /configs\.prod\.custom_host: egress to 10\.20\.30\.40 \(10\.20\.30\.40\) is denied: private address 10\.0\.0\.0\/8 is not in egress\.allow; add "10\.20\.30\.40"/,
  },
  {
    name: 'a misspelt key inside a saved config',
    state: () => goodState({ configs: [{ id: 'prod', config: { provider: '@backup', retyr: { attempts: 1 } } }] }),
    problem: /configs\.prod\.retyr: unknown key \(did you mean "retry"\?\)/,
  },
  {
    name: 'a bad value inside a saved config',
    state: () => goodState({ configs: [{ id: 'prod', config: { provider: '@backup', retry: { attempts: 9 } } }] }),
    problem: /configs\.prod\.retry\.attempts: must be at most 5/,
  },
];

async function validate(state: Record<string, unknown>, name: string): Promise<{ code: number | null; stdout: string }> {
  const file = join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
  await writeFile(file, dump(state));
  const child = spawn(process.execPath, [CLI, 'validate', file], { env: { ...process.env } });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.resume();
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout };
}

describe('aigateway validate', () => {
  test('a working state is valid (an in-cluster host that egress.allow lists included)', async () => {
    const state = goodState({ providers: [{ slug: 'vllm', provider: 'vllm', customHost: 'http://vllm.ml.svc.cluster.local:8000/v1' }] });
    state['egress'] = { allow: ['127.0.0.0/8', '::1', '*.svc.cluster.local'] };
    const result = await validate(state, 'good');
    assert.equal(result.code, 0, result.stdout);
    assert.match(result.stdout, /: valid$/m);
  });

  for (const bad of BAD_CASES) {
    test(`${bad.name} is an error with its path and a hint`, async () => {
      const result = await validate(bad.state(), bad.name);
      assert.equal(result.code, 1, result.stdout);
      assert.match(result.stdout, new RegExp(`✗ ${bad.problem.source}`));
      assert.match(result.stdout, /invalid \(\d+ problems?\)/);
    });
  }
});

describe('gateway start', () => {
  for (const bad of BAD_CASES) {
    test(`refuses ${bad.name}`, async () => {
      const started = startHarness({ state: bad.state() });
      // A gateway that did start must not outlive the test.
      void started.then((harness) => harness.close(), () => undefined);
      await assert.rejects(started, (error: Error) => {
        assert.match(error.message, bad.problem);
        return true;
      });
    });
  }
});

describe('hot reload', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: goodState(), reloadIntervalMs: 50 });
  });
  after(() => harness.close());

  const reloads = async (result: 'success' | 'failure'): Promise<number> => {
    const metric = await harness.gateway.metrics.configReloads.get();
    return metric.values.find((value) => value.labels['result'] === result)?.value ?? 0;
  };

  const chatViaProd = async (): Promise<number> => {
    const response = await fetch(`${harness.gateway.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'prod' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await response.arrayBuffer();
    return response.status;
  };

  test('each bad edit is refused and counted as a failure; the last good state keeps serving', async () => {
    assert.equal(await chatViaProd(), 200);
    const successes = await reloads('success');
    for (const bad of BAD_CASES) {
      const failures = await reloads('failure');
      await harness.writeState(bad.state());
      await eventually(async () => (await reloads('failure')) > failures, `the reload with ${bad.name} to fail`, { timeoutMs: 10_000 });
      const logged = harness.logs.filter((line) => line['msg'] === 'state reload rejected; the last good state keeps serving').at(-1);
      assert.match(JSON.stringify(logged?.['errors'] ?? []), new RegExp(bad.problem.source.replaceAll('"', '\\\\"')), bad.name);
      assert.equal(await chatViaProd(), 200, `still serving after ${bad.name}`);
    }
    assert.equal(await reloads('success'), successes, 'no refused edit was counted as a success');
  });
});

describe('operator', () => {
  function conditions(result: RenderResult, kind: string, name: string): Record<string, { status: string; reason: string; message: string }> {
    const status = result.statuses.find((candidate) => candidate.kind === kind && candidate.name === name);
    assert.ok(status !== undefined, `no status for ${kind}/${name}`);
    return Object.fromEntries(status.conditions.map((condition) => [condition.type, condition]));
  }

  const renderOf = (list: Parameters<typeof resources>[0]): RenderResult =>
    renderGatewayState(resources(list, [], ['127.0.0.0/8']));

  const backup = (): ReturnType<typeof resource> => resource('Provider', 'backup', { provider: 'openai' });

  /** The rendered documents load in the proxy (the operator never renders what the proxy refuses). */
  function loadsInProxy(result: RenderResult): void {
    const texts = serializeRenderedState(result);
    const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('; '));
  }

  test('a target naming no Provider: ResolvedRefs=False with the path and hint; served, the missing provider listed', () => {
    const result = renderOf([
      backup(),
      resource('GatewayConfig', 'prod', { strategy: { mode: 'fallback' }, targets: [{ provider: '@bakup' }, { provider: '@backup' }] }),
    ]);
    const prod = conditions(result, 'GatewayConfig', 'prod');
    assert.equal(prod['Accepted']?.status, 'True');
    assert.equal(prod['ResolvedRefs']?.reason, 'ProviderNotFound');
    assert.match(prod['ResolvedRefs']?.message ?? '', /spec\.targets\[0\]\.provider: no saved provider "@bakup" \(did you mean "@backup"\?\)/);
    assert.match(prod['ResolvedRefs']?.message ?? '', /skipped/);
    assert.deepEqual(result.state.configs.map((config) => config.id), ['prod']);
    assert.deepEqual(result.state.unavailableProviders, ['bakup']);
    loadsInProxy(result);
  });

  test('an unknown provider or a host outside egress.allow: the Provider is not Accepted, with the path and hint', () => {
    const result = renderOf([
      backup(),
      resource('Provider', 'typo', { provider: 'opena1' }),
      resource('Provider', 'vllm', { provider: 'vllm', customHost: 'http://vllm.ml.svc.cluster.local:8000/v1' }),
    ]);
    const typo = conditions(result, 'Provider', 'typo');
    assert.equal(typo['Accepted']?.status, 'False');
    assert.equal(typo['Accepted']?.reason, 'InvalidProvider');
    assert.match(typo['Accepted']?.message ?? '', /spec\.provider: unknown provider "opena1" \(did you mean "openai"\?\)/);
    const vllm = conditions(result, 'Provider', 'vllm');
    assert.equal(vllm['Accepted']?.reason, 'InvalidProvider');
    assert.match(vllm['Accepted']?.message ?? '', /spec\.customHost: egress to vllm\.ml\.svc\.cluster\.local is denied/);
    assert.deepEqual(result.state.providers.map((provider) => provider.slug), ['backup']);
    loadsInProxy(result);
  });

  test('a bad value or a host outside egress.allow in a GatewayConfig: not Accepted, left out', () => {
    const result = renderOf([
      backup(),
      resource('GatewayConfig', 'typo', { provider: '@backup', retyr: { attempts: 1 } }),
      resource('GatewayConfig', 'private', { provider: '@backup', custom_host: 'http://10.20.30.40/v1' }),
    ]);
    assert.match(conditions(result, 'GatewayConfig', 'typo')['Accepted']?.message ?? '', /retyr: unknown key \(did you mean "retry"\?\)/);
    assert.match(conditions(result, 'GatewayConfig', 'private')['Accepted']?.message ?? '', /spec\.custom_host: egress to 10\.20\.30\.40/);
    assert.deepEqual(result.state.configs, []);
    loadsInProxy(result);
  });
});
