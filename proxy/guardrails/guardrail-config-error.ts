// Problems found while compiling hooks and guardrails, reported the way config
// validation reports them: `path: message`, e.g.
// `input_guardrails[0]["default.regexMatch"].rule: must be a string`.

import type { z } from 'zod';
import { fromZodIssue } from '../config/zod-issues.ts';
import { GatewayError } from '../errors.ts';

export type IssuePath = ReadonlyArray<string | number>;

export interface GuardrailIssue {
  readonly path: IssuePath;
  readonly message: string;
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

/** zod's wording rewritten in the house style, shared with config validation. */
export function describeZodIssue(issue: z.core.$ZodIssue): GuardrailIssue[] {
  return fromZodIssue(issue);
}
