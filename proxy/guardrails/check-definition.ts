// The contract between the hook engine and one check. A check is compiled once per
// config (`prepare`: parameters validated by its zod schema, regexes and JSON schemas
// compiled) into a function the engine calls per request with a CheckInput.

import type { z } from 'zod';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { fromZodIssue } from '../openai/zod-issues.ts';
import { CheckParameterError } from '../errors.ts';

/** Before the upstream call (request hooks, input guardrails) or after it (response hooks, output guardrails). */
export type HookPhase = 'before' | 'after';

/** What a check sees of one request. */
export interface CheckInput {
  readonly phase: HookPhase;
  readonly endpoint: InferenceEndpoint;
  /** The request body, with the mutations of earlier checks applied (before hooks). */
  readonly requestBody: Record<string, unknown>;
  /** The parsed OpenAI-shaped answer (after hooks only), with earlier mutations applied. */
  readonly responseBody: unknown;
  /** The request's text (before) or the answer's text (after); see guardrail-text.ts. */
  readonly text: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly model: string | undefined;
  readonly provider: string | undefined;
  /** Aborted when the request is abandoned; absent for async hooks (they outlive the request). */
  readonly signal: AbortSignal | undefined;
  readonly fetch: typeof fetch;
  /** Default webhook timeout in milliseconds, when the check sets none. */
  readonly webhookTimeoutMs: number;
}

/** A check's answer. */
export interface CheckOutcome {
  /** True when the check passed (before `not` is applied). */
  readonly verdict: boolean;
  /** Why: shown in `hook_results[].checks[].data`. */
  readonly data?: Record<string, unknown>;
  /**
   * A mutator's rewrite of the body under check: the request body before the call,
   * the answer after it. Absent (or the same reference) when nothing changed.
   */
  readonly body?: unknown;
}

/** A compiled check: called once per request. May throw; the engine reports it as an error. */
export type PreparedCheck = (input: CheckInput) => CheckOutcome | Promise<CheckOutcome>;

/** One check id's behaviour. */
export interface CheckDefinition<Parameters = unknown> {
  /** The full id, e.g. `default.regexMatch`. */
  readonly id: string;
  /** Validates the check's parameters (`not` is handled by the engine and removed first). */
  readonly parameters: z.ZodType<Parameters>;
  /** Whether a compiled check may rewrite the body (mutators are chained, never run side by side). */
  mayTransform(parameters: Parameters): boolean;
  /**
   * Compiles the check. Throws CheckParameterError for problems zod cannot express
   * (an invalid regex, a JSON schema that does not compile).
   */
  prepare(parameters: Parameters): PreparedCheck;
}


/** A parameter problem, with its path inside the parameters object. */
export interface CheckIssue {
  readonly path: ReadonlyArray<string | number>;
  readonly message: string;
}

/** A check compiled from valid parameters. */
export interface PreparedCheckEntry {
  readonly run: PreparedCheck;
  readonly mayTransform: boolean;
}

/** A check id as the registry holds it: parameter type erased behind `compile`. */
export interface RegisteredCheck {
  readonly id: string;
  /** Validates the parameters (without `not`) and compiles them; issues when they are bad. */
  compile(parameters: Record<string, unknown>): PreparedCheckEntry | { readonly issues: readonly CheckIssue[] };
}

/**
 * Wraps a definition for the registry: zod issues and CheckParameterErrors become issues.
 *
 * @example
 * export const notNull = defineCheck({ id: 'default.notNull', parameters: z.strictObject({}), mayTransform: neverTransforms,
 *   prepare: () => ({ text }) => ({ verdict: text.trim() !== '' }) });
 */
export function defineCheck<Parameters>(definition: CheckDefinition<Parameters>): RegisteredCheck {
  return {
    id: definition.id,
    compile(raw) {
      const parsed = definition.parameters.safeParse(raw, { reportInput: true });
      if (!parsed.success) {
        return { issues: parsed.error.issues.flatMap((issue) => fromZodIssue(issue)) };
      }
      try {
        return { run: definition.prepare(parsed.data), mayTransform: definition.mayTransform(parsed.data) };
      } catch (error) {
        if (error instanceof CheckParameterError) return { issues: [{ path: error.path, message: error.message }] };
        throw error;
      }
    },
  };
}

/** A never-transforming check's `mayTransform`. */
export function neverTransforms(): boolean {
  return false;
}
