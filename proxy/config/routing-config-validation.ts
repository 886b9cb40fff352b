// parseRoutingConfig(): the one entry point that turns untrusted input (an
// inline x-gateway-config header or a saved config from the state file) into a
// RoutingConfig, or into a list of readable issues for a 400 / a load warning.
import type { z } from 'zod';
import { RoutingConfigSchema } from './routing-config-schema.ts';
import type { RoutingConfig } from './routing-config-schema.ts';
import { collectRoutingRuleIssues, isPlainObject } from './routing-config-rules.ts';
import type { ConfigIssue } from './routing-config-rules.ts';

/** How many levels of `targets` may nest below the root config. */
export const MAX_TARGET_DEPTH = 8;

export type RoutingConfigParseResult =
  | { readonly success: true; readonly config: RoutingConfig }
  | { readonly success: false; readonly issues: string[] };

/**
 * Validates a config against the schema and the cross-key rules and reports
 * every problem as `path: message`. Never throws.
 *
 * @example
 * parseRoutingConfig({ retry: { attempts: 9 } })
 * // → { success: false, issues: ['retry.attempts: must be at most 5'] }
 */
export function parseRoutingConfig(input: unknown): RoutingConfigParseResult {
  try {
    const tooDeep = findTooDeepTargets(input);
    if (tooDeep !== undefined) return { success: false, issues: [formatIssue(tooDeep)] };
    // reportInput lets the formatter tell a missing key ("Required") from a wrong value.
    const parsed = RoutingConfigSchema.safeParse(input, { reportInput: true });
    const issues: ConfigIssue[] = parsed.success ? [] : parsed.error.issues.flatMap((issue) => fromZodIssue(issue, []));
    issues.push(...collectRoutingRuleIssues(input));
    if (parsed.success && issues.length === 0) return { success: true, config: parsed.data };
    return { success: false, issues: unique(issues.map(formatIssue)) };
  } catch (error) {
    // Only exotic inputs get here (throwing getters, proxies); JSON never does.
    const reason = error instanceof Error ? error.message : String(error);
    return { success: false, issues: [`config: could not be validated (${reason})`] };
  }
}

/** Joins issues for one error message, e.g. a 400 body: `a: Required; b.c: unknown key`. */
export function formatConfigIssues(issues: readonly string[]): string {
  return issues.join('; ');
}

/**
 * Walks only the `targets` chains, iteratively, so neither this walk nor the
 * recursive schema can overflow the stack (or loop on a cyclic object).
 */
function findTooDeepTargets(input: unknown): ConfigIssue | undefined {
  const pending: Array<{ node: unknown; path: ReadonlyArray<string | number>; depth: number }> = [
    { node: input, path: [], depth: 0 },
  ];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    if (!isPlainObject(item.node)) continue;
    const targets = item.node['targets'];
    if (!Array.isArray(targets)) continue;
    const targetsPath = [...item.path, 'targets'];
    if (item.depth >= MAX_TARGET_DEPTH) {
      return { path: targetsPath, message: `must not nest more than ${MAX_TARGET_DEPTH} levels deep` };
    }
    targets.forEach((node: unknown, index) => pending.push({ node, path: [...targetsPath, index], depth: item.depth + 1 }));
  }
  return undefined;
}

type ZodIssue = z.core.$ZodIssue;

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  record: 'an object',
  array: 'an array',
};

/** Rewrites zod's wording into the house style (`Required`, `must be …`, `unknown key`). */
function fromZodIssue(issue: ZodIssue, prefix: ReadonlyArray<PropertyKey>): ConfigIssue[] {
  const path = [...prefix, ...issue.path].map((segment) => (typeof segment === 'symbol' ? String(segment) : segment));
  const at = (message: string): ConfigIssue[] => [{ path, message }];
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined && path.length > 0) return at('Required');
      return at(`must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}`);
    case 'invalid_value':
      if (issue.input === undefined && path.length > 0) return at('Required');
      return at(`must be one of ${issue.values.map(String).join(', ')}`);
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ path: [...path, key], message: 'unknown key' }));
    case 'too_small':
      return at(tooSmallMessage(issue));
    case 'too_big':
      return at(tooBigMessage(issue));
    case 'invalid_union':
      return fromUnionIssue(issue, path);
    default:
      // invalid_format and custom carry messages written in the schema.
      return at(issue.message);
  }
}

function tooSmallMessage(issue: z.core.$ZodIssueTooSmall): string {
  const minimum = Number(issue.minimum);
  if (issue.origin === 'array' || issue.origin === 'set') {
    return minimum <= 1 ? 'must not be empty' : `must contain at least ${minimum} items`;
  }
  if (issue.origin === 'string') return minimum <= 1 ? 'must not be empty' : `must be at least ${minimum} characters long`;
  return issue.inclusive === false ? `must be greater than ${minimum}` : `must be at least ${minimum}`;
}

function tooBigMessage(issue: z.core.$ZodIssueTooBig): string {
  const maximum = Number(issue.maximum);
  if (issue.origin === 'array' || issue.origin === 'set') return `must contain at most ${maximum} items`;
  if (issue.origin === 'string') return `must be at most ${maximum} characters long`;
  return issue.inclusive === false ? `must be less than ${maximum}` : `must be at most ${maximum}`;
}

/**
 * A union (guardrail: id string | object) fails in every branch. Report the
 * branch that matched the input's type, if one did; otherwise name the types.
 */
function fromUnionIssue(issue: z.core.$ZodIssueInvalidUnion, path: ReadonlyArray<string | number>): ConfigIssue[] {
  const wrongType = (branch: readonly ZodIssue[]): boolean =>
    branch.length === 1 && branch[0]?.code === 'invalid_type' && branch[0].path.length === 0;
  const matching = issue.errors.filter((branch) => !wrongType(branch));
  const [only] = matching;
  if (matching.length === 1 && only !== undefined) return only.flatMap((inner) => fromZodIssue(inner, path));
  const expected = issue.errors.flatMap((branch) => {
    const [first] = branch;
    return first?.code === 'invalid_type' ? [TYPE_NAMES[first.expected] ?? `a ${first.expected}`] : [];
  });
  const message = expected.length > 0 ? `must be ${unique(expected).join(' or ')}` : issue.message;
  return [{ path, message }];
}

/** `targets[1].retry.attempts: Required`; the root is `config`. */
function formatIssue(issue: ConfigIssue): string {
  return `${formatPath(issue.path)}: ${issue.message}`;
}

function formatPath(path: ReadonlyArray<string | number>): string {
  if (path.length === 0) return 'config';
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
