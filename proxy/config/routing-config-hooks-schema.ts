// Hooks (before_request_hooks / after_request_hooks) and guardrails
// (input_guardrails / output_guardrails) inside a routing config.
//
// Extensions beyond the spec's tables (ours, so saved guardrails and inline
// hooks read alike): `deny`, `sequential` and `fail_on_error` booleans at the
// item level of hooks, and `sequential` / `fail_on_error` on guardrail objects.
import { z } from 'zod';
import { NonEmptyStringSchema, PlainObjectSchema } from './routing-config-primitives.ts';

/** `feedback` inside on_fail / on_success: a score sent to the request log. */
export const HookFeedbackSchema = z.strictObject({
  value: z.number().optional().describe('Score recorded in the request log.'),
  weight: z.number().optional().describe('Weight of the score.'),
  metadata: PlainObjectSchema.optional().describe('More fields recorded with the score.'),
});

/** on_fail / on_success where the spec allows only `feedback`. */
export const HookOutcomeSchema = z.strictObject({
  feedback: HookFeedbackSchema.optional().describe('Feedback recorded in the request log.'),
});

/** on_fail / on_success where the spec also allows `deny` (before-request hooks, output guardrails). */
export const DenyingHookOutcomeSchema = z.strictObject({
  feedback: HookFeedbackSchema.optional().describe('Feedback recorded in the request log.'),
  deny: z.boolean().optional().describe('Refuse the request in this outcome.'),
});

/** One check run by a hook: its id and that check's parameters. */
export const HookCheckSchema = z.strictObject({
  id: NonEmptyStringSchema.describe('Check id, e.g. default.regexMatch or default.pii.'),
  parameters: PlainObjectSchema.describe("The check's parameters (see the check's documentation)."),
});

const hookFields = {
  id: NonEmptyStringSchema.describe('Id of the hook (in logs and answers).'),
  type: NonEmptyStringSchema.optional().describe('Kind of hook (guardrail, mutator).'),
  checks: z.array(HookCheckSchema).optional().describe('The checks the hook runs.'),
  // Extensions (not in the spec's Hooks table).
  deny: z.boolean().optional().describe('Refuse the request when a check fails.'),
  sequential: z.boolean().optional().describe('Run the checks one after another, not at once.'),
  fail_on_error: z.boolean().optional().describe('Treat a check that errors as failed (default: passed).'),
};

/** An item of `before_request_hooks`: outcomes may `deny`; no `async`. */
export const BeforeRequestHookSchema = z.strictObject({
  ...hookFields,
  on_fail: DenyingHookOutcomeSchema.optional().describe('What happens when a check fails.'),
  on_success: DenyingHookOutcomeSchema.optional().describe('What happens when every check passes.'),
});

/** An item of `after_request_hooks`: may run `async`; outcomes carry feedback only. */
export const AfterRequestHookSchema = z.strictObject({
  ...hookFields,
  async: z.boolean().optional().describe('Run after the answer is sent (cannot deny).'),
  on_fail: HookOutcomeSchema.optional().describe('What happens when a check fails.'),
  on_success: HookOutcomeSchema.optional().describe('What happens when every check passes.'),
});

const guardrailFields = {
  id: NonEmptyStringSchema.optional().describe('Id of the guardrail (in logs and answers).'),
  deny: z.boolean().optional().describe('Refuse the request when a check fails.'),
  async: z.boolean().optional().describe('Run without holding the request (cannot deny).'),
  // Extensions (not in the spec's Guardrails table).
  sequential: z.boolean().optional().describe('Run the checks one after another, not at once.'),
  fail_on_error: z.boolean().optional().describe('Treat a check that errors as failed (default: passed).'),
};

/**
 * Any key that is not a known field names a check and must map to that
 * check's parameters object. A loose object + check keeps the inferred type
 * usable (`catchall` would force every known field to be an object too).
 */
function requireObjectValuedExtraKeys(knownKeys: ReadonlySet<string>) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx<Record<string, unknown>>): void => {
    for (const [key, extra] of Object.entries(value)) {
      if (knownKeys.has(key)) continue;
      if (typeof extra === 'object' && extra !== null && !Array.isArray(extra)) continue;
      ctx.addIssue({ code: 'custom', path: [key], message: 'must be an object (a check id maps to its parameters)' });
    }
  };
}

// Run even when a known field failed, so every problem is reported at once.
const always = { when: () => true };

const inputGuardrailShape = {
  ...guardrailFields,
  on_fail: HookOutcomeSchema.optional().describe('What happens when a check fails.'),
  on_success: HookOutcomeSchema.optional().describe('What happens when every check passes.'),
};
const outputGuardrailShape = {
  ...guardrailFields,
  on_fail: DenyingHookOutcomeSchema.optional().describe('What happens when a check fails.'),
  on_success: DenyingHookOutcomeSchema.optional().describe('What happens when every check passes.'),
};

export const InputGuardrailObjectSchema = z
  .looseObject(inputGuardrailShape)
  .superRefine(requireObjectValuedExtraKeys(new Set(Object.keys(inputGuardrailShape))), always);

export const OutputGuardrailObjectSchema = z
  .looseObject(outputGuardrailShape)
  .superRefine(requireObjectValuedExtraKeys(new Set(Object.keys(outputGuardrailShape))), always);

/** An item of `input_guardrails`: the id of a saved guardrail, or an inline guardrail. */
export const InputGuardrailSchema = z.union([NonEmptyStringSchema, InputGuardrailObjectSchema]);

/** An item of `output_guardrails`: the id of a saved guardrail, or an inline guardrail. */
export const OutputGuardrailSchema = z.union([NonEmptyStringSchema, OutputGuardrailObjectSchema]);

export type HookFeedback = z.infer<typeof HookFeedbackSchema>;
export type HookOutcome = z.infer<typeof HookOutcomeSchema>;
export type DenyingHookOutcome = z.infer<typeof DenyingHookOutcomeSchema>;
export type HookCheck = z.infer<typeof HookCheckSchema>;
export type BeforeRequestHook = z.infer<typeof BeforeRequestHookSchema>;
export type AfterRequestHook = z.infer<typeof AfterRequestHookSchema>;
export type HookSettings = BeforeRequestHook | AfterRequestHook;
export type InputGuardrail = z.infer<typeof InputGuardrailSchema>;
export type OutputGuardrail = z.infer<typeof OutputGuardrailSchema>;
export type GuardrailSettings = InputGuardrail | OutputGuardrail;
