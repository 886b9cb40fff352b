// A table-driven harness for built-in checks: each case runs through the real engine
// (compileGuardrails → runBeforeHooks), so `not`, parameter validation and the text a
// check sees are exercised the way a request exercises them.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { InferenceEndpoint } from '../../../proxy/openai/inference-endpoint.ts';
import { compileGuardrails } from '../../../proxy/guardrails/compile-guardrails.ts';
import { runBeforeHooks, type HookCheckResult, type RunOptions } from '../../../proxy/guardrails/run-hooks.ts';
import { GuardrailConfigError } from '../../../proxy/errors.ts';

/** What one case sends: a text (a user message), or more of the request. */
export interface CaseInput {
  readonly text?: string;
  readonly endpoint?: InferenceEndpoint;
  readonly model?: string;
  readonly metadata?: Record<string, unknown>;
}

export type Parameters = Record<string, unknown>;

export interface CheckTable {
  /** [parameters, input] pairs the check must pass (and fail with `not: true`). */
  readonly pass: ReadonlyArray<readonly [Parameters, string | CaseInput]>;
  /** [parameters, input] pairs the check must fail (and pass with `not: true`). */
  readonly fail: ReadonlyArray<readonly [Parameters, string | CaseInput]>;
  /** [parameters, expected issue after `<check path>.`] pairs that must not compile. */
  readonly bad: ReadonlyArray<readonly [Parameters, string]>;
}

export function requestBodyFor(endpoint: InferenceEndpoint, text: string, model = 'gpt-4o-mini'): Record<string, unknown> {
  switch (endpoint) {
    case 'chat.completions':
      return { model, messages: [{ role: 'user', content: text }] };
    case 'completions':
      return { model, prompt: text };
    case 'embeddings':
      return { model, input: text };
    case 'responses':
      return { model, input: text };
    case 'messages':
      return { model, max_tokens: 64, messages: [{ role: 'user', content: text }] };
    case 'messages.count_tokens':
      return { model, messages: [{ role: 'user', content: text }] };
  }
}

/** Runs one check with `parameters` over `input`; returns its hook_results entry. */
export async function runOneCheck(
  checkId: string,
  parameters: Parameters,
  input: string | CaseInput,
  options: RunOptions = {},
): Promise<HookCheckResult> {
  const { text = '', endpoint = 'chat.completions', model, metadata } = typeof input === 'string' ? { text: input } : input;
  const compiled = compileGuardrails({ input_guardrails: [{ [checkId]: parameters }] }, new Map());
  const outcome = await runBeforeHooks(
    compiled,
    { endpoint, requestBody: requestBodyFor(endpoint, text, model), ...(model === undefined ? {} : { model }), ...(metadata === undefined ? {} : { metadata }) },
    options,
  );
  const check = outcome.results[0]?.checks[0];
  assert.ok(check !== undefined, 'the check ran');
  return check;
}

/** The issues compiling `parameters` raises. */
export function compileIssues(checkId: string, parameters: Parameters): readonly string[] {
  try {
    compileGuardrails({ input_guardrails: [{ [checkId]: parameters }] }, new Map());
  } catch (error) {
    if (error instanceof GuardrailConfigError) return error.issues;
    throw error;
  }
  return [];
}

function label(input: string | CaseInput): string {
  const text = JSON.stringify(input);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Registers describe/it blocks for one check's table. */
export function describeCheckTable(checkId: string, table: CheckTable): void {
  describe(checkId, () => {
    for (const [parameters, input] of table.pass) {
      it(`passes ${JSON.stringify(parameters)} on ${label(input)}`, async () => {
        const result = await runOneCheck(checkId, parameters, input);
        assert.equal(result.error, undefined, result.error?.message);
        assert.equal(result.verdict, true, JSON.stringify(result.data));
        assert.equal((await runOneCheck(checkId, { ...parameters, not: true }, input)).verdict, false, 'not: true inverts');
      });
    }
    for (const [parameters, input] of table.fail) {
      it(`fails ${JSON.stringify(parameters)} on ${label(input)}`, async () => {
        const result = await runOneCheck(checkId, parameters, input);
        assert.equal(result.error, undefined, result.error?.message);
        assert.equal(result.verdict, false, JSON.stringify(result.data));
        assert.equal((await runOneCheck(checkId, { ...parameters, not: true }, input)).verdict, true, 'not: true inverts');
      });
    }
    for (const [parameters, expected] of table.bad) {
      it(`rejects ${JSON.stringify(parameters)}`, () => {
        const issues = compileIssues(checkId, parameters);
        const prefix = `input_guardrails[0][${JSON.stringify(checkId)}]`;
        assert.ok(
          issues.some((issue) => issue.startsWith(prefix) && issue.includes(expected)),
          `expected an issue containing ${JSON.stringify(expected)}, got ${JSON.stringify(issues)}`,
        );
      });
    }
    it('rejects a non-boolean not', () => {
      const issues = compileIssues(checkId, { ...(table.pass[0]?.[0] ?? {}), not: 'yes' });
      assert.ok(issues.includes(`input_guardrails[0][${JSON.stringify(checkId)}].not: must be a boolean`), JSON.stringify(issues));
    });
  });
}
