import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseRoutingConfig } from '../../../proxy/config/routing-config-validation.ts';
import { GatewayError, GuardrailConfigError } from '../../../proxy/errors.ts';
import { compileGuardrails, EMPTY_GUARDRAILS, type GuardrailFields } from '../../../proxy/guardrails/compile-guardrails.ts';
import { GuardrailEntrySchema, type GuardrailEntry } from '../../../proxy/guardrails/guardrail-schema.ts';

function issuesOf(settings: GuardrailFields, saved: ReadonlyMap<string, GuardrailEntry> = new Map(), path?: Array<string | number>): readonly string[] {
  try {
    compileGuardrails(settings, saved, path === undefined ? {} : { path });
  } catch (error) {
    assert.ok(error instanceof GuardrailConfigError, String(error));
    return error.issues;
  }
  assert.fail('expected compileGuardrails to throw');
}

const saved = new Map<string, GuardrailEntry>([
  ['pii', { id: 'pii', deny: true, checks: [{ id: 'default.pii', parameters: { mode: 'detect' } }] }],
]);

describe('compileGuardrails', () => {
  it('reports every problem at once, each with its path', () => {
    const issues = issuesOf({
      before_request_hooks: [
        {
          id: 'h',
          checks: [
            { id: 'default.regexMatch', parameters: {} },
            { id: 'default.nope', parameters: {} },
          ],
        },
      ],
      input_guardrails: [{ 'default.regexMatch': { rule: '(a+)+$' } }, { wordCount: { minWords: 'x' } }, 'missing'],
      output_guardrails: [{ async: true, deny: true, notNull: {} }],
    });
    assert.deepEqual(issues, [
      'before_request_hooks[0].checks[0].parameters.rule: Required',
      'before_request_hooks[0].checks[1].id: unknown check "default.nope"',
      'input_guardrails[0]["default.regexMatch"].rule: may backtrack catastrophically (a quantifier inside a quantified group, like (a+)+); rewrite it without nesting',
      'input_guardrails[1].wordCount.minWords: must be a number',
      'input_guardrails[2]: unknown guardrail "missing"',
      'output_guardrails[0].async: an async hook cannot deny (the answer is sent before it finishes)',
    ]);
  });

  it('throws a 400 GatewayError naming the issues', () => {
    assert.throws(
      () => compileGuardrails({ input_guardrails: [{ contains: {} }] }, new Map()),
      (error: unknown) =>
        error instanceof GatewayError &&
        error.status === 400 &&
        error.code === 'AIGW_ERR_INVALID_CONFIG' &&
        error.message === 'invalid guardrails: input_guardrails[0].contains.words: Required',
    );
  });

  it('prefixes issue paths with where the config sits', () => {
    assert.deepEqual(issuesOf({ input_guardrails: ['missing'] }, new Map(), ['targets', 1]), ['targets[1].input_guardrails[0]: unknown guardrail "missing"']);
  });

  it('rejects a pathological regex at compile, before any request', () => {
    const issues = issuesOf({ before_request_hooks: [{ id: 'h', checks: [{ id: 'regexMatch', parameters: { rule: '^(\\w+\\s?)*$' } }] }] });
    assert.equal(issues.length, 1);
    assert.match(issues[0] ?? '', /^before_request_hooks\[0\]\.checks\[0\]\.parameters\.rule: may backtrack catastrophically/);
  });

  it('compiles both forms into one hook shape', () => {
    const compiled = compileGuardrails(
      {
        before_request_hooks: [{ id: 'long', type: 'mutator', checks: [{ id: 'regexReplace', parameters: { rule: 'x' } }], on_fail: { deny: true } }],
        input_guardrails: ['pii', { sequential: true, fail_on_error: true, wordCount: { maxWords: 5, not: true }, 'default.notNull': {} }],
        output_guardrails: [{ id: 'out', async: true, contains: { words: ['x'] }, on_success: { feedback: { value: 1 } } }],
      },
      saved,
    );
    assert.equal(compiled.empty, false);
    assert.equal(compiled.afterDenies, false, 'the only after hook is async');
    assert.deepEqual(
      compiled.before.map(({ id, type, phase, denyOnFail, denyOnSuccess, async, sequential, failOnError }) => ({
        id, type, phase, denyOnFail, denyOnSuccess, async, sequential, failOnError,
      })),
      [
        { id: 'long', type: 'mutator', phase: 'before', denyOnFail: true, denyOnSuccess: false, async: false, sequential: false, failOnError: false },
        { id: 'pii', type: 'guardrail', phase: 'before', denyOnFail: true, denyOnSuccess: false, async: false, sequential: false, failOnError: false },
        { id: 'input_guardrails[1]', type: 'guardrail', phase: 'before', denyOnFail: false, denyOnSuccess: false, async: false, sequential: true, failOnError: true },
      ],
    );
    assert.deepEqual(
      compiled.before.map((hook) => hook.checks.map(({ id, not, mayTransform }) => ({ id, not, mayTransform }))),
      [
        [{ id: 'default.regexReplace', not: false, mayTransform: true }],
        [{ id: 'default.pii', not: false, mayTransform: false }],
        [
          { id: 'default.wordCount', not: true, mayTransform: false },
          { id: 'default.notNull', not: false, mayTransform: false },
        ],
      ],
    );
    assert.deepEqual(compiled.after[0]?.onSuccessFeedback, { value: 1 });
    assert.ok(Object.isFrozen(compiled) && Object.isFrozen(compiled.before) && Object.isFrozen(compiled.before[0]));
  });

  it('marks streams for buffering only when an awaited after hook can deny', () => {
    assert.equal(compileGuardrails({ output_guardrails: [{ notNull: {} }] }, new Map()).afterDenies, false);
    assert.equal(compileGuardrails({ output_guardrails: [{ deny: true, notNull: {} }] }, new Map()).afterDenies, true);
    assert.equal(compileGuardrails({ after_request_hooks: [{ id: 'a', deny: true, checks: [] }] }, new Map()).afterDenies, true);
  });

  it('returns the shared empty value for a config without hooks', () => {
    assert.equal(compileGuardrails({}, new Map()), EMPTY_GUARDRAILS);
    assert.equal(compileGuardrails({ input_guardrails: [], after_request_hooks: [] }, new Map()), EMPTY_GUARDRAILS);
  });

  it('compiles what the routing-config schema accepts', () => {
    const parsed = parseRoutingConfig({
      provider: 'openai',
      api_key: 'sk-x',
      input_guardrails: [{ deny: true, on_fail: { feedback: { value: -1 } }, regexMatch: { rule: 'ignore (all|previous) instructions', flags: 'i', not: true } }],
      output_guardrails: [{ deny: true, on_fail: { deny: true }, jsonSchema: { schema: { type: 'object' } } }],
    });
    assert.ok(parsed.success, parsed.success ? '' : parsed.issues.join('; '));
    const compiled = compileGuardrails(parsed.config, new Map());
    assert.equal(compiled.before.length, 1);
    assert.equal(compiled.afterDenies, true);
  });
});

describe('GuardrailEntrySchema', () => {
  it('accepts a saved guardrail', () => {
    const entry = { id: 'pii', deny: true, on_fail: { feedback: { value: -1 } }, checks: [{ id: 'pii', parameters: { mode: 'redact' } }] };
    assert.deepEqual(GuardrailEntrySchema.parse(entry), entry);
  });

  it('reports bad checks with their paths at load', () => {
    const result = GuardrailEntrySchema.safeParse({
      id: 'g',
      async: true,
      deny: true,
      checks: [
        { id: 'default.regexMatch', parameters: { rule: '(' } },
        { id: 'default.nope', parameters: {} },
      ],
    });
    assert.equal(result.success, false);
    assert.deepEqual(
      result.error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message.split(' (')[0]}`),
      ['checks.0.parameters.rule: is not a valid regular expression', 'checks.1.id: unknown check "default.nope"', 'async: an async guardrail cannot deny'],
    );
  });

  it('rejects unknown keys and an empty check list', () => {
    assert.equal(GuardrailEntrySchema.safeParse({ id: 'g', checks: [] }).success, false);
    assert.equal(GuardrailEntrySchema.safeParse({ id: 'g', checks: [{ id: 'notNull', parameters: {} }], extra: 1 }).success, false);
  });
});
