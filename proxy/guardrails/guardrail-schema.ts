// A saved guardrail: an entry of the state file's `guardrails:` list, referenced from
// configs by id (`input_guardrails: ["pii-redact"]`). Same fields as a long-form hook,
// so a saved guardrail and an inline hook read alike. Check ids and parameters are
// validated here too, so a bad entry is reported at load with its path, not when a
// request first uses it.

import { GuardrailEntryFieldsSchema, type GuardrailEntry } from '../config/guardrail-entry-schema.ts';
import { BUILTIN_CHECKS } from './builtin-checks.ts';
import { compileCheck } from './compile-check.ts';

/**
 * @example
 * GuardrailEntrySchema.parse({ id: 'no-secrets', deny: true, checks: [{ id: 'default.pii', parameters: { categories: ['api_key'] } }] })
 */
export const GuardrailEntrySchema = GuardrailEntryFieldsSchema.superRefine((entry, ctx) => {
  entry.checks.forEach((check, index) => {
    const compiled = compileCheck(check.id, check.parameters, ['checks', index], BUILTIN_CHECKS);
    if ('issues' in compiled) for (const issue of compiled.issues) ctx.addIssue({ code: 'custom', path: [...issue.path], message: issue.message });
  });
  if (entry.async === true && (entry.deny === true || entry.on_fail?.deny === true || entry.on_success?.deny === true)) {
    ctx.addIssue({ code: 'custom', path: ['async'], message: 'an async guardrail cannot deny (the answer is sent before it finishes)' });
  }
});

// The type lives with the fields, on the state floor (config/guardrail-entry-schema.ts).
export type { GuardrailEntry };
