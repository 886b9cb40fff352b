import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { RoutingConfig } from '../../../proxy/config/routing-config-schema.ts';
import { defineCheck, type RegisteredCheck } from '../../../proxy/guardrails/check-definition.ts';
import { compileGuardrails, EMPTY_GUARDRAILS } from '../../../proxy/guardrails/compile-guardrails.ts';
import type { GuardrailEntry } from '../../../proxy/guardrails/guardrail-schema.ts';
import { mapRequestText } from '../../../proxy/guardrails/guardrail-text.ts';
import { runAfterHooks, runBeforeHooks, type HooksOutcome } from '../../../proxy/guardrails/run-hooks.ts';

/** A promise the test settles, to hold a check mid-flight. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Fails the test instead of hanging it when `promise` does not settle in time. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Fake checks recording what they saw, held by gates the test opens. */
function fakeRegistry() {
  const events: string[] = [];
  const gates = new Map<string, ReturnType<typeof deferred>>();
  const started = new Map<string, ReturnType<typeof deferred>>();
  const gate = (name: string) => {
    if (!gates.has(name)) gates.set(name, deferred());
    return gates.get(name) as ReturnType<typeof deferred>;
  };
  const startedSignal = (name: string) => {
    if (!started.has(name)) started.set(name, deferred());
    return started.get(name) as ReturnType<typeof deferred>;
  };
  const checks: RegisteredCheck[] = [
    defineCheck({
      id: 'test.held',
      parameters: z.strictObject({ name: z.string(), verdict: z.boolean().default(true) }),
      mayTransform: () => false,
      prepare: ({ name, verdict }) => async ({ text }) => {
        events.push(`start ${name} saw ${text}`);
        startedSignal(name).resolve();
        await gate(name).promise;
        events.push(`end ${name}`);
        return { verdict, data: { name } };
      },
    }),
    defineCheck({
      id: 'test.append',
      parameters: z.strictObject({ suffix: z.string() }),
      mayTransform: () => true,
      prepare: ({ suffix }) => async ({ text, requestBody, endpoint }) => {
        events.push(`append ${suffix} saw ${text}`);
        return { verdict: true, body: mapRequestText(endpoint, requestBody, (value) => value + suffix) };
      },
    }),
    defineCheck({
      id: 'test.saw',
      parameters: z.strictObject({ name: z.string() }),
      mayTransform: () => false,
      prepare: ({ name }) => ({ text }) => {
        events.push(`${name} saw ${text}`);
        return { verdict: true };
      },
    }),
    defineCheck({
      id: 'test.verdict',
      parameters: z.strictObject({ pass: z.boolean() }),
      mayTransform: () => false,
      prepare: ({ pass }) => () => ({ verdict: pass, data: { pass } }),
    }),
    defineCheck({
      id: 'test.throws',
      parameters: z.strictObject({}),
      mayTransform: () => false,
      prepare: () => () => {
        throw new Error('boom');
      },
    }),
  ];
  return { registry: new Map(checks.map((check) => [check.id, check])), events, gate, startedSignal };
}

const prompt = (text: string) => ({ model: 'm', prompt: text });

function compileWith(registry: ReadonlyMap<string, RegisteredCheck>, config: RoutingConfig, saved: ReadonlyMap<string, GuardrailEntry> = new Map()) {
  return compileGuardrails(config, saved, { registry });
}

describe('runBeforeHooks / runAfterHooks', () => {
  it('runs the checks of a hook side by side', async () => {
    const { registry, gate, startedSignal } = fakeRegistry();
    const compiled = compileWith(registry, {
      before_request_hooks: [{ id: 'h', checks: [{ id: 'test.held', parameters: { name: 'a' } }, { id: 'test.held', parameters: { name: 'b' } }] }],
    });
    const pending = runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') });
    // Both start before either is released: they run concurrently.
    await within(Promise.all([startedSignal('a').promise, startedSignal('b').promise]), 2_000, 'both checks started');
    gate('b').resolve();
    gate('a').resolve();
    const outcome = await pending;
    assert.deepEqual(outcome.results[0]?.checks.map((check) => check.id), ['test.held', 'test.held']);
    assert.deepEqual(outcome.results[0]?.checks.map((check) => check.data?.['name']), ['a', 'b'], 'results keep config order');
  });

  it('runs checks in order with sequential: true, each seeing the previous rewrite', async () => {
    const { registry, events, gate, startedSignal } = fakeRegistry();
    const compiled = compileWith(registry, {
      before_request_hooks: [
        {
          id: 'h',
          sequential: true,
          checks: [
            { id: 'test.append', parameters: { suffix: 'A' } },
            { id: 'test.held', parameters: { name: 'gate' } },
            { id: 'test.append', parameters: { suffix: 'B' } },
            { id: 'test.saw', parameters: { name: 'last' } },
          ],
        },
      ],
    });
    const pending = runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') });
    await within(startedSignal('gate').promise, 2_000, 'gate started');
    assert.deepEqual(events, ['append A saw x', 'start gate saw xA'], 'nothing after the held check has started');
    gate('gate').resolve();
    const outcome = await pending;
    assert.deepEqual(events, ['append A saw x', 'start gate saw xA', 'end gate', 'append B saw xA', 'last saw xAB']);
    assert.deepEqual(outcome.requestBody, prompt('xAB'));
  });

  it('in a parallel hook, validators see the hook input while rewrites are chained', async () => {
    const { registry, events } = fakeRegistry();
    const compiled = compileWith(registry, {
      before_request_hooks: [
        {
          id: 'h',
          checks: [
            { id: 'test.append', parameters: { suffix: 'A' } },
            { id: 'test.saw', parameters: { name: 'validator' } },
            { id: 'test.append', parameters: { suffix: 'B' } },
          ],
        },
      ],
    });
    const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') });
    assert.ok(events.includes('validator saw x'));
    assert.ok(events.includes('append B saw xA'));
    assert.deepEqual(outcome.requestBody, prompt('xAB'));
    assert.deepEqual(outcome.results[0]?.checks.map((check) => check.transformed), [true, false, true]);
  });

  it('runs hooks in config order when one may rewrite, so later hooks see the rewrite', async () => {
    const { registry, events } = fakeRegistry();
    const compiled = compileWith(registry, {
      before_request_hooks: [{ id: 'rewrite', checks: [{ id: 'test.append', parameters: { suffix: '!' } }] }],
      input_guardrails: [{ id: 'look', 'test.saw': { name: 'guardrail' } }],
    });
    const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('hi') });
    assert.deepEqual(events, ['append ! saw hi', 'guardrail saw hi!']);
    assert.deepEqual(outcome.results.map((result) => result.id), ['rewrite', 'look']);
  });

  it('turns a check error into a pass, or a fail with fail_on_error, and reports it', async () => {
    const { registry } = fakeRegistry();
    const lenient = await runBeforeHooks(compileWith(registry, { input_guardrails: [{ 'test.throws': {} }] }), {
      endpoint: 'completions',
      requestBody: prompt('x'),
    });
    assert.equal(lenient.verdict, true);
    assert.deepEqual(lenient.results[0]?.checks[0]?.error, { message: 'boom' });
    const strict = await runBeforeHooks(compileWith(registry, { input_guardrails: [{ fail_on_error: true, deny: true, 'test.throws': {} }] }), {
      endpoint: 'completions',
      requestBody: prompt('x'),
    });
    assert.equal(strict.verdict, false);
    assert.equal(strict.denied, true);
  });

  it('inverts verdicts with not: true, but never errors', async () => {
    const { registry } = fakeRegistry();
    const outcome = await runBeforeHooks(
      compileWith(registry, { input_guardrails: [{ 'test.verdict': { pass: false, not: true }, 'test.throws': { not: true } }] }),
      { endpoint: 'completions', requestBody: prompt('x') },
    );
    assert.deepEqual(outcome.results[0]?.checks.map((check) => check.verdict), [true, true]);
    assert.equal(outcome.results[0]?.checks[1]?.error?.message, 'boom');
  });

  const denyCases: Array<[string, Record<string, unknown>, boolean, { verdict: boolean; denied: boolean }]> = [
    ['a failing hook without deny', {}, false, { verdict: false, denied: false }],
    ['a failing hook with deny', { deny: true }, false, { verdict: false, denied: true }],
    ['a passing hook with deny', { deny: true }, true, { verdict: true, denied: false }],
    ['a failing hook with on_fail.deny', { on_fail: { deny: true } }, false, { verdict: false, denied: true }],
    ['a failing hook whose on_fail.deny: false overrides deny', { deny: true, on_fail: { deny: false } }, false, { verdict: false, denied: false }],
    ['a passing hook with on_success.deny', { on_success: { deny: true } }, true, { verdict: true, denied: true }],
  ];
  for (const [name, settings, pass, expected] of denyCases) {
    it(`decides deny for ${name}`, async () => {
      const { registry } = fakeRegistry();
      const compiled = compileWith(registry, {
        before_request_hooks: [{ id: 'h', ...settings, checks: [{ id: 'test.verdict', parameters: { pass } }] }],
      });
      const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') });
      assert.deepEqual({ verdict: outcome.verdict, denied: outcome.denied }, expected);
      assert.equal(outcome.results[0]?.deny, expected.denied);
    });
  }

  it('denies after the call from output guardrails', async () => {
    const { registry } = fakeRegistry();
    const compiled = compileWith(registry, { output_guardrails: [{ deny: true, 'test.verdict': { pass: false } }] });
    assert.equal(compiled.afterDenies, true);
    const outcome = await runAfterHooks(compiled, { endpoint: 'completions', requestBody: prompt('x'), responseBody: { choices: [{ text: 'y' }] } });
    assert.equal(outcome.denied, true);
  });

  it('attaches on_fail / on_success feedback by the verdict', async () => {
    const { registry } = fakeRegistry();
    const compiled = compileWith(registry, {
      before_request_hooks: [
        {
          id: 'fails',
          on_fail: { feedback: { value: -1, weight: 1, metadata: { why: 'x' } } },
          on_success: { feedback: { value: 1 } },
          checks: [{ id: 'test.verdict', parameters: { pass: false } }],
        },
        { id: 'passes', on_success: { feedback: { value: 1 } }, checks: [{ id: 'test.verdict', parameters: { pass: true } }] },
        { id: 'plain', checks: [{ id: 'test.verdict', parameters: { pass: true } }] },
      ],
    });
    const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') });
    assert.deepEqual(outcome.results.map((result) => result.feedback), [{ value: -1, weight: 1, metadata: { why: 'x' } }, { value: 1 }, undefined]);
    assert.equal('feedback' in (outcome.results[2] ?? {}), false);
  });

  it('starts async hooks without awaiting them and reports them through asyncDone', async () => {
    const { registry, gate, events } = fakeRegistry();
    const compiled = compileWith(registry, {
      after_request_hooks: [
        { id: 'log-later', async: true, checks: [{ id: 'test.held', parameters: { name: 'slow', verdict: false } }] },
        { id: 'now', checks: [{ id: 'test.verdict', parameters: { pass: true } }] },
      ],
    });
    const outcome: HooksOutcome = await within(
      runAfterHooks(compiled, { endpoint: 'completions', requestBody: prompt('x'), responseBody: { choices: [{ text: 'answer' }] } }),
      2_000,
      'the awaited hooks',
    );
    assert.deepEqual(outcome.results.map((result) => result.id), ['now']);
    assert.equal(outcome.verdict, true, 'an async failure does not change the verdict');
    assert.ok(outcome.asyncDone !== undefined);
    assert.deepEqual(events, ['start slow saw answer']);
    gate('slow').resolve();
    const asyncResults = await within(outcome.asyncDone, 2_000, 'asyncDone');
    assert.equal(asyncResults.length, 1);
    assert.equal(asyncResults[0]?.id, 'log-later');
    assert.equal(asyncResults[0]?.async, true);
    assert.equal(asyncResults[0]?.verdict, false);
    assert.equal(asyncResults[0]?.deny, false);
    assert.equal(compiled.afterDenies, false);
  });

  it('returns hook_results in the documented shape', async () => {
    const { registry } = fakeRegistry();
    const compiled = compileWith(registry, {
      input_guardrails: [{ id: 'g1', deny: true, 'test.verdict': { pass: false }, 'test.throws': {} }],
    });
    const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') });
    const [result] = outcome.results;
    assert.ok(result !== undefined);
    assert.deepEqual(Object.keys(result).sort(), ['async', 'checks', 'deny', 'execution_time', 'id', 'transformed', 'type', 'verdict']);
    assert.equal(typeof result.execution_time, 'number');
    assert.deepEqual(
      { ...result, execution_time: 0, checks: result.checks.map((check) => ({ ...check, execution_time: 0 })) },
      {
        id: 'g1',
        type: 'guardrail',
        verdict: false,
        deny: true,
        async: false,
        execution_time: 0,
        transformed: false,
        checks: [
          { id: 'test.verdict', verdict: false, data: { pass: false }, execution_time: 0, transformed: false },
          { id: 'test.throws', verdict: true, data: null, error: { message: 'boom' }, execution_time: 0, transformed: false },
        ],
      },
    );
    assert.deepEqual(JSON.parse(JSON.stringify(outcome.results)), outcome.results, 'plain JSON');
  });

  it('reports every check to the metrics sink, and a throwing sink changes nothing', async () => {
    const { registry } = fakeRegistry();
    const compiled = compileWith(registry, { input_guardrails: [{ 'test.verdict': { pass: false }, 'test.throws': {}, 'test.saw': { name: 's' } }] });
    const seen: string[] = [];
    await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') }, {
      onCheck: (id, verdict, seconds) => {
        assert.ok(seconds >= 0 && seconds < 5);
        seen.push(`${id}:${verdict}`);
      },
    });
    assert.deepEqual(seen.sort(), ['test.saw:pass', 'test.throws:error', 'test.verdict:fail']);
    const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('x') }, {
      onCheck: () => {
        throw new Error('sink down');
      },
    });
    assert.equal(outcome.verdict, false);
  });

  it('runs a saved guardrail referenced by id', async () => {
    const saved = new Map<string, GuardrailEntry>([
      ['no-x', { id: 'no-x', deny: true, checks: [{ id: 'default.regexMatch', parameters: { rule: 'x', not: true } }] }],
    ]);
    const compiled = compileGuardrails({ input_guardrails: ['no-x'] }, saved);
    const denied = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('has x') });
    assert.equal(denied.denied, true);
    assert.equal(denied.results[0]?.id, 'no-x');
    const allowed = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: prompt('clean') });
    assert.deepEqual({ verdict: allowed.verdict, denied: allowed.denied }, { verdict: true, denied: false });
  });

  it('passes straight through with no hooks', async () => {
    const outcome = await runBeforeHooks(EMPTY_GUARDRAILS, { endpoint: 'completions', requestBody: prompt('x') });
    assert.deepEqual(outcome, { verdict: true, denied: false, results: [] });
  });

  it('reports a check whose rewrite of the request is not an object as an error', async () => {
    const registry = new Map([
      [
        'test.bad-rewrite',
        defineCheck({ id: 'test.bad-rewrite', parameters: z.strictObject({}), mayTransform: () => true, prepare: () => () => ({ verdict: true, body: ['x'] }) }),
      ],
    ]);
    const outcome = await runBeforeHooks(compileWith(registry, { input_guardrails: [{ 'test.bad-rewrite': {} }] }), {
      endpoint: 'completions',
      requestBody: prompt('x'),
    });
    assert.equal(outcome.requestBody, undefined);
    assert.match(outcome.results[0]?.checks[0]?.error?.message ?? '', /not a JSON object/);
  });
});
