// One check id + parameters → a compiled check, or the issues that prevent it. Shared by
// compileGuardrails (configs) and GuardrailEntrySchema (saved guardrails at load).

import type { PreparedCheck, RegisteredCheck } from './check-definition.ts';
import type { FieldIssue, IssuePath } from '../openai/zod-issues.ts';
import { normalizeCheckId } from './builtin-checks.ts';

/** A check ready to run inside a hook. */
export interface CompiledCheck {
  /** The full id (`default.regexMatch`), as reported in hook_results. */
  readonly id: string;
  /** Inverts the verdict (an error stays an error). */
  readonly not: boolean;
  /** True when the check may rewrite the body. */
  readonly mayTransform: boolean;
  readonly run: PreparedCheck;
}

/**
 * Compiles one check. `idPath` locates the id (reported for an unknown id) and
 * `parametersPath` the parameters (prefix of parameter issues).
 */
export function compileCheckAt(
  rawId: string,
  parameters: Readonly<Record<string, unknown>>,
  idPath: IssuePath,
  parametersPath: IssuePath,
  registry: ReadonlyMap<string, RegisteredCheck>,
): CompiledCheck | { readonly issues: FieldIssue[] } {
  const id = normalizeCheckId(rawId);
  const check = registry.get(id);
  if (check === undefined) return { issues: [{ path: idPath, message: `unknown check "${id}"` }] };
  const { not, ...rest } = parameters;
  if (not !== undefined && typeof not !== 'boolean') {
    return { issues: [{ path: [...parametersPath, 'not'], message: 'must be a boolean' }] };
  }
  const compiled = check.compile(rest);
  if ('issues' in compiled) {
    return { issues: compiled.issues.map((issue) => ({ path: [...parametersPath, ...issue.path], message: issue.message })) };
  }
  return { id, not: not === true, mayTransform: compiled.mayTransform, run: compiled.run };
}

/** Long form (`checks[i]: { id, parameters }`): issues under `<path>.id` / `<path>.parameters`. */
export function compileCheck(
  rawId: string,
  parameters: Readonly<Record<string, unknown>>,
  path: IssuePath,
  registry: ReadonlyMap<string, RegisteredCheck>,
): CompiledCheck | { readonly issues: FieldIssue[] } {
  return compileCheckAt(rawId, parameters, [...path, 'id'], [...path, 'parameters'], registry);
}
