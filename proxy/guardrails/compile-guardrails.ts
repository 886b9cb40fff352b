// compileGuardrails(): a config's hooks and guardrails → immutable compiled hooks, once
// per config (saved configs at load, inline configs per distinct header). Both forms
// become one shape:
//   before = before_request_hooks, then input_guardrails
//   after  = after_request_hooks,  then output_guardrails
// Check parameters are validated by each check's zod schema and compiled here (regexes,
// JSON schemas), so a request never pays for it and a bad config is a 400, not a 500.

import type { GuardrailFields } from '../config/guardrail-compiler.ts';
import type { HookFeedback } from '../config/routing-config-hooks-schema.ts';
import type { HookPhase, RegisteredCheck } from './check-definition.ts';
import type { GuardrailEntry } from './guardrail-schema.ts';
import { BUILTIN_CHECKS } from './builtin-checks.ts';
import { compileCheck, compileCheckAt, type CompiledCheck } from './compile-check.ts';
import { formatIssue, formatIssuePath, type FieldIssue, type IssuePath } from '../openai/zod-issues.ts';
import { GuardrailConfigError } from '../errors.ts';

export type { CompiledCheck } from './compile-check.ts';

/** One hook (or guardrail) ready to run. */
export interface CompiledHook {
  /** The hook's id; a guardrail object without one is named by its place (`input_guardrails[0]`). */
  readonly id: string;
  /** The hook's `type` as configured; `guardrail` when none. Informational. */
  readonly type: string;
  readonly phase: HookPhase;
  readonly checks: readonly CompiledCheck[];
  /** Deny when the hook fails (`deny`, or `on_fail.deny`, which wins when set). */
  readonly denyOnFail: boolean;
  /** Deny when the hook passes (`on_success.deny`). */
  readonly denyOnSuccess: boolean;
  /** Run after the answer without being awaited; results only through `asyncDone`. */
  readonly async: boolean;
  /** Run checks one after another, each seeing the previous one's rewrite. */
  readonly sequential: boolean;
  /** A check error fails the check instead of passing it. */
  readonly failOnError: boolean;
  readonly onFailFeedback: HookFeedback | undefined;
  readonly onSuccessFeedback: HookFeedback | undefined;
}

export interface CompiledGuardrails {
  readonly before: readonly CompiledHook[];
  readonly after: readonly CompiledHook[];
  /** No hooks at all: the request path can skip the engine. */
  readonly empty: boolean;
  /** Some awaited after-hook can deny: a stream must be buffered until it has run. */
  readonly afterDenies: boolean;
}

/** The routing-config fields this module reads (named on the state floor, which asks about them). */
export type { GuardrailFields };

export interface CompileOptions {
  /** Check ids to their definitions; the built-ins by default. */
  readonly registry?: ReadonlyMap<string, RegisteredCheck>;
  /** Where this config sits (e.g. `['targets', 1]`), prefixed to every issue path. */
  readonly path?: IssuePath;
}

const GUARDRAIL_SETTINGS = new Set(['id', 'deny', 'async', 'on_fail', 'on_success', 'sequential', 'fail_on_error']);

export const EMPTY_GUARDRAILS: CompiledGuardrails = Object.freeze({ before: [], after: [], empty: true, afterDenies: false });

/**
 * Compiles a config's hooks and guardrails; throws GuardrailConfigError listing every
 * problem (`input_guardrails[0]["default.regexMatch"].rule: …`).
 *
 * @example
 * // Deny requests that mention a secret:
 * compileGuardrails({ input_guardrails: [{ deny: true, regexMatch: { rule: 'secret', flags: 'i', not: true } }] }, new Map());
 */
export function compileGuardrails(
  settings: GuardrailFields,
  saved: ReadonlyMap<string, GuardrailEntry>,
  options: CompileOptions = {},
): CompiledGuardrails {
  const registry = options.registry ?? BUILTIN_CHECKS;
  const root = options.path ?? [];
  const issues: FieldIssue[] = [];
  const compile = (id: string, hook: HookLike, phase: HookPhase, checks: ReadonlyArray<CompiledCheck | { issues: FieldIssue[] }>, path: IssuePath): CompiledHook => {
    const compiled: CompiledCheck[] = [];
    for (const check of checks) {
      if ('issues' in check) issues.push(...check.issues);
      else compiled.push(check);
    }
    const built = buildHook(id, hook, phase, compiled);
    if (built.async && (built.denyOnFail || built.denyOnSuccess)) {
      issues.push({ path: [...path, 'async'], message: 'an async hook cannot deny (the answer is sent before it finishes)' });
    }
    return built;
  };

  const longForm = (field: 'before_request_hooks' | 'after_request_hooks', phase: HookPhase): CompiledHook[] =>
    (settings[field] ?? []).map((hook, index) => {
      const path = [...root, field, index];
      const checks = (hook.checks ?? []).map((check, checkIndex) =>
        compileCheck(check.id, check.parameters, [...path, 'checks', checkIndex], registry),
      );
      return compile(hook.id, hook, phase, checks, path);
    });

  const shortForm = (field: 'input_guardrails' | 'output_guardrails', phase: HookPhase): CompiledHook[] =>
    (settings[field] ?? []).flatMap((guardrail, index) => {
      const path = [...root, field, index];
      if (typeof guardrail === 'string') {
        const entry = saved.get(guardrail);
        if (entry === undefined) {
          issues.push({ path, message: `unknown guardrail "${guardrail}"` });
          return [];
        }
        const checks = entry.checks.map((check, checkIndex) =>
          compileCheck(check.id, check.parameters, ['guardrails', guardrail, 'checks', checkIndex], registry),
        );
        return [compile(entry.id, entry, phase, checks, path)];
      }
      const checks = Object.entries(guardrail)
        .filter(([key]) => !GUARDRAIL_SETTINGS.has(key))
        .map(([key, parameters]) => compileCheckAt(key, asParameters(parameters), [...path, key], [...path, key], registry));
      return [compile(guardrail.id ?? formatIssuePath([field, index]), guardrail, phase, checks, path)];
    });

  const before = [...longForm('before_request_hooks', 'before'), ...shortForm('input_guardrails', 'before')];
  const after = [...longForm('after_request_hooks', 'after'), ...shortForm('output_guardrails', 'after')];
  if (issues.length > 0) throw new GuardrailConfigError(issues.map((issue) => formatIssue(issue)));
  if (before.length === 0 && after.length === 0) return EMPTY_GUARDRAILS;
  return Object.freeze({
    before: Object.freeze(before),
    after: Object.freeze(after),
    empty: false,
    afterDenies: after.some((hook) => !hook.async && (hook.denyOnFail || hook.denyOnSuccess)),
  });
}

/** The schema guarantees extra guardrail keys map to objects; anything else compiles as no parameters. */
function asParameters(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

interface HookLike {
  readonly type?: string | undefined;
  readonly deny?: boolean | undefined;
  readonly async?: boolean | undefined;
  readonly sequential?: boolean | undefined;
  readonly fail_on_error?: boolean | undefined;
  readonly on_fail?: { readonly feedback?: HookFeedback | undefined; readonly deny?: boolean | undefined } | undefined;
  readonly on_success?: { readonly feedback?: HookFeedback | undefined; readonly deny?: boolean | undefined } | undefined;
}

function buildHook(id: string, hook: HookLike, phase: HookPhase, checks: readonly CompiledCheck[]): CompiledHook {
  return Object.freeze({
    id,
    type: hook.type ?? 'guardrail',
    phase,
    checks: Object.freeze([...checks]),
    denyOnFail: hook.on_fail?.deny ?? hook.deny ?? false,
    denyOnSuccess: hook.on_success?.deny ?? false,
    async: hook.async ?? false,
    sequential: hook.sequential ?? false,
    failOnError: hook.fail_on_error ?? false,
    onFailFeedback: hook.on_fail?.feedback,
    onSuccessFeedback: hook.on_success?.feedback,
  });
}
