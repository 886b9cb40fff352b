// A saved guardrail: an entry of the state file's `guardrails:` list, referenced from
// configs by id (`input_guardrails: ["pii-redact"]`). Same fields as a long-form hook,
// so a saved guardrail and an inline hook read alike. Check ids and parameters are
// validated here too, so a bad entry is reported at load with its path, not when a
// request first uses it.

import { GuardrailEntryFieldsSchema, guardrailEntryIssues, type GuardrailEntry } from '../config/guardrail-entry-schema.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from './builtin-guardrail-compiler.ts';

/**
 * @example
 * GuardrailEntrySchema.parse({ id: 'no-secrets', deny: true, checks: [{ id: 'default.pii', parameters: { categories: ['api_key'] } }] })
 */
export const GuardrailEntrySchema = GuardrailEntryFieldsSchema.superRefine((entry, ctx) => {
  for (const issue of [...BUILTIN_GUARDRAIL_COMPILER.entryIssues(entry), ...guardrailEntryIssues(entry)]) {
    ctx.addIssue({ code: 'custom', path: [...issue.path], message: issue.message });
  }
});

// The type lives with the fields, on the state floor (config/guardrail-entry-schema.ts).
export type { GuardrailEntry };
