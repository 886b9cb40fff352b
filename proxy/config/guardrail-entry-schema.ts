import { z } from 'zod';
import { DenyingHookOutcomeSchema, HookCheckSchema } from './routing-config-hooks-schema.ts';
import { NonEmptyStringSchema } from './routing-config-primitives.ts';

// The fields of a saved guardrail (an entry of the state file's `guardrails:` list), on the
// state floor so the snapshot can name its type. The check ids and parameters are validated
// by the guardrail engine (config/guardrail-compiler.ts, passed in at load), which knows the checks.

export const GuardrailEntryFieldsSchema = z.strictObject({
  id: NonEmptyStringSchema,
  type: NonEmptyStringSchema.optional(),
  checks: z.array(HookCheckSchema).min(1),
  deny: z.boolean().optional(),
  async: z.boolean().optional(),
  on_fail: DenyingHookOutcomeSchema.optional(),
  on_success: DenyingHookOutcomeSchema.optional(),
  sequential: z.boolean().optional(),
  fail_on_error: z.boolean().optional(),
});

export type GuardrailEntry = z.infer<typeof GuardrailEntryFieldsSchema>;

/** Problems of a saved guardrail the fields alone show: an async one cannot deny. */
export function guardrailEntryIssues(entry: GuardrailEntry): Array<{ path: string[]; message: string }> {
  if (entry.async === true && (entry.deny === true || entry.on_fail?.deny === true || entry.on_success?.deny === true)) {
    return [{ path: ['async'], message: 'an async guardrail cannot deny (the answer is sent before it finishes)' }];
  }
  return [];
}

/** A saved guardrail as the state file holds it; its checks are compiled at load (gateway-state.ts). */
export const SavedGuardrailSchema = GuardrailEntryFieldsSchema.superRefine((entry, ctx) => {
  for (const issue of guardrailEntryIssues(entry)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
});
