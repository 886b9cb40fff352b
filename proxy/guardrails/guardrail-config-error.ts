// Problems found while compiling hooks and guardrails, reported the way config
// validation reports them: `path: message`, e.g.
// `input_guardrails[0]["default.regexMatch"].rule: must be a string`.

import type { z } from 'zod';
import { GatewayError } from '../errors.ts';

export type IssuePath = ReadonlyArray<string | number>;

export interface GuardrailIssue {
  readonly path: IssuePath;
  readonly message: string;
}

/** Thrown by compileGuardrails: every problem of the config at once, as a 400 (AIGW_ERR_INVALID_CONFIG). */
export class GuardrailConfigError extends GatewayError {
  readonly issues: readonly string[];

  constructor(issues: readonly string[]) {
    super('AIGW_ERR_INVALID_CONFIG', `invalid guardrails: ${issues.join('; ')}`);
    this.name = 'GuardrailConfigError';
    this.issues = issues;
  }
}

/** `['input_guardrails', 0, 'default.regexMatch', 'rule']` → `input_guardrails[0]["default.regexMatch"].rule`. */
export function formatIssuePath(path: IssuePath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

export function formatIssue(issue: GuardrailIssue): string {
  const path = formatIssuePath(issue.path);
  return path === '' ? issue.message : `${path}: ${issue.message}`;
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

/** zod's wording rewritten in the house style (`Required`, `must be …`, `unknown key`), like config validation. */
export function describeZodIssue(issue: z.core.$ZodIssue): GuardrailIssue[] {
  const path = issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
  const at = (message: string): GuardrailIssue[] => [{ path, message }];
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined && path.length > 0) return at('Required');
      return at(`must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}`);
    case 'invalid_value':
      if (issue.input === undefined && path.length > 0) return at('Required');
      return at(`must be one of ${issue.values.map(String).join(', ')}`);
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ path: [...path, key], message: 'unknown key' }));
    case 'too_small': {
      const minimum = Number(issue.minimum);
      if (issue.origin === 'array' || issue.origin === 'string') {
        return at(minimum <= 1 ? 'must not be empty' : `must have at least ${minimum} ${issue.origin === 'array' ? 'items' : 'characters'}`);
      }
      return at(issue.inclusive === false ? `must be greater than ${minimum}` : `must be at least ${minimum}`);
    }
    case 'too_big': {
      const maximum = Number(issue.maximum);
      if (issue.origin === 'array') return at(`must have at most ${maximum} items`);
      if (issue.origin === 'string') return at(`must be at most ${maximum} characters`);
      return at(issue.inclusive === false ? `must be less than ${maximum}` : `must be at most ${maximum}`);
    }
    default:
      // invalid_format, custom and unions carry the message written in the schema.
      return at(issue.message);
  }
}
