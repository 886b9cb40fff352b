import { z } from 'zod';
import { DenyingHookOutcomeSchema, HookCheckSchema } from './routing-config-hooks-schema.ts';
import { NonEmptyStringSchema } from './routing-config-primitives.ts';

// The fields of a saved guardrail (an entry of the state file's `guardrails:` list), on the
// state floor so the snapshot can name its type. The check ids and parameters are validated
// by guardrails/guardrail-schema.ts (GuardrailEntrySchema), which knows the checks.

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
