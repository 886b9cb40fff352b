import type { z } from 'zod';

// zod's issues in the house style (`Required`, `must be …`, `unknown key`) and one way to
// name the field, so every validator (request bodies, prompts, routing configs, guardrail
// parameters) words its 400s the same way.

export type IssuePath = ReadonlyArray<string | number>;

/** One problem: where (a path inside the checked value) and what. */
export interface FieldIssue {
  readonly path: IssuePath;
  readonly message: string;
}

type AnyIssue = z.core.$ZodIssue | z.core.$ZodRawIssue;

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  record: 'an object',
  array: 'an array',
  null: 'null',
};

function typeName(expected: string): string {
  return TYPE_NAMES[expected] ?? `a ${expected}`;
}

/**
 * The house wording of the generic issue kinds (types, ranges, enums); undefined for the
 * kinds whose message the schema writes (custom rules, formats, unions with their own).
 * `path` is the issue's full path: a missing value is `Required` except at the root.
 */
function houseWording(issue: AnyIssue, path: ReadonlyArray<PropertyKey>): string | undefined {
  const missing = issue.input === undefined && path.length > 0;
  switch (issue.code) {
    case 'invalid_type':
      return missing ? 'Required' : `must be ${typeName(issue.expected)}`;
    case 'invalid_value':
      return missing ? 'Required' : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'too_big': {
      const max = String(issue.maximum);
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${max} items`;
      if (issue.origin === 'string') return `must be at most ${max} characters`;
      return issue.inclusive === false ? `must be less than ${max}` : `must be at most ${max}`;
    }
    case 'too_small': {
      const min = String(issue.minimum);
      const sized = issue.origin === 'array' || issue.origin === 'set' || issue.origin === 'string';
      if (sized && Number(issue.minimum) <= 1) return 'must not be empty';
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at least ${min} items`;
      if (issue.origin === 'string') return `must be at least ${min} characters`;
      return issue.inclusive === false ? `must be greater than ${min}` : `must be at least ${min}`;
    }
    case 'invalid_key': {
      // A record key's own issue: "key must be at most 64 characters".
      const [inner] = issue.issues;
      return `key ${inner === undefined ? 'is invalid' : (houseWording(inner, []) ?? inner.message)}`;
    }
    default:
      return undefined;
  }
}

/**
 * The error map for safeParse (`schema.safeParse(input, { error: describeZodIssue })`), so
 * the wording applies to that parse only, not to zod globally. A schema's own message
 * (unions, refinements) outranks it.
 */
export function describeZodIssue(issue: z.core.$ZodRawIssue): string | undefined {
  return houseWording(issue, issue.path ?? []);
}

/**
 * A parsed issue rewritten after the fact (parse with `reportInput: true`, so a missing
 * key reads `Required`): unknown keys become one issue each, a union that failed in every
 * branch reports the branch that matched the input's type.
 */
export function fromZodIssue(issue: z.core.$ZodIssue, prefix: ReadonlyArray<PropertyKey> = []): FieldIssue[] {
  const path = [...prefix, ...issue.path].map((segment) => (typeof segment === 'symbol' ? String(segment) : segment));
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ path: [...path, key], message: 'unknown key' }));
    case 'invalid_union':
      return fromUnionIssue(issue, path);
    default:
      return [{ path, message: houseWording(issue, path) ?? issue.message }];
  }
}

/**
 * A union (guardrail: id string | object) fails in every branch. Report the
 * branch that matched the input's type, if one did; otherwise name the types.
 */
function fromUnionIssue(issue: z.core.$ZodIssueInvalidUnion, path: IssuePath): FieldIssue[] {
  const wrongType = (branch: readonly z.core.$ZodIssue[]): boolean =>
    branch.length === 1 && branch[0]?.code === 'invalid_type' && branch[0].path.length === 0;
  const matching = issue.errors.filter((branch) => !wrongType(branch));
  const [only] = matching;
  if (matching.length === 1 && only !== undefined) return only.flatMap((inner) => fromZodIssue(inner, path));
  const expected = issue.errors.flatMap((branch) => {
    const [first] = branch;
    return first?.code === 'invalid_type' ? [typeName(first.expected)] : [];
  });
  const message = expected.length > 0 ? `must be ${[...new Set(expected)].join(' or ')}` : issue.message;
  return [{ path, message }];
}

/**
 * `['messages', 0, 'role']` → `messages[0].role`; `['logit_bias', '50256']` → `logit_bias.50256`;
 * a key that is not a plain name is quoted: `input_guardrails[0]["default.regexMatch"].rule`.
 */
export function formatIssuePath(path: ReadonlyArray<PropertyKey>): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') {
      text += `[${segment}]`;
      continue;
    }
    const key = String(segment);
    if (/^(?:[A-Za-z_$][\w$]*|\d+)$/.test(key)) text += text === '' ? key : `.${key}`;
    else text += `[${JSON.stringify(key)}]`;
  }
  return text;
}

/** `path: message`; at the root, `root: message` when the caller names the root, else the message alone. */
export function formatIssue(issue: { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }, root?: string): string {
  const path = formatIssuePath(issue.path);
  if (path !== '') return `${path}: ${issue.message}`;
  return root === undefined ? issue.message : `${root}: ${issue.message}`;
}
