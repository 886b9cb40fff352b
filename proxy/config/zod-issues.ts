import type { z } from 'zod';

// zod's issues rewritten in the house style (`Required`, `must be …`, `unknown key`), so
// every validator (routing configs, guardrail parameters) words its 400s the same way.

type ZodIssue = z.core.$ZodIssue;

export interface ZodIssueText {
  readonly path: ReadonlyArray<string | number>;
  readonly message: string;
}


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
export function fromZodIssue(issue: ZodIssue, prefix: ReadonlyArray<PropertyKey> = []): ZodIssueText[] {
  const path = [...prefix, ...issue.path].map((segment) => (typeof segment === 'symbol' ? String(segment) : segment));
  const at = (message: string): ZodIssueText[] => [{ path, message }];
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
function fromUnionIssue(issue: z.core.$ZodIssueInvalidUnion, path: ReadonlyArray<string | number>): ZodIssueText[] {
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


function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
