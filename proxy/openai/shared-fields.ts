// Request fields shared by OpenAI's chat completions, completions and responses bodies
// (and the stored prompts' parameters, which render into chat completions), so they all
// enforce identical bounds: sampling, token limits, stop sequences, tools, the model id.
//
// Messages are short phrases ("must be at most 2"); the validators prefix the field path,
// and zod-issues.ts writes the generic ones (ranges, types, enums).

import { z } from 'zod';

/**
 * The message for a union that matched no option. A union's own message outranks the
 * shared one, so a missing required field is reported here as "Required" too.
 */
export function unionError(message: string): (issue: { input?: unknown }) => string {
  return (issue) => (issue.input === undefined ? 'Required' : message);
}

const INT64_BOUND = 9223372036854776000;

/** A JSON integer; unlike z.int() it is not capped at 2^53, so 64-bit seeds pass. */
export const int64 = z
  .number()
  .refine(Number.isInteger, 'must be an integer')
  .refine((value) => value >= -INT64_BOUND && value <= INT64_BOUND, 'must be a 64-bit integer');

export const temperature = z.number().min(0).max(2).nullable().optional();
export const topP = z.number().min(0).max(1).nullable().optional();
export const penalty = z.number().min(-2).max(2).nullable().optional();
export const seed = int64.nullable().optional();
export const choiceCount = z.int().min(1).max(128).nullable().optional();
export const tokenLimit = z.int().min(0).nullable().optional();
export const stream = z.boolean().nullable().optional();
export const streamOptions = z.looseObject({}).nullable().optional();

/** Token id → bias; OpenAI rejects keys that are not token ids. */
export const logitBias = z
  .record(z.string().regex(/^\d+$/, 'must be a token id (a string of digits)'), z.number().min(-100).max(100))
  .nullable()
  .optional();

// The cap is a refinement on the union rather than .max(4) on the array: zod treats an
// over-long array as a type mismatch inside a union and would hide the specific message.
export const stop = z
  .union([z.string(), z.array(z.string())], {
    error: unionError('must be a string or an array of at most 4 strings'),
  })
  .refine((value) => typeof value === 'string' || value.length <= 4, 'at most 4 sequences')
  .nullable()
  .optional();

export const toolChoice = z
  .union([z.enum(['none', 'auto', 'required']), z.looseObject({})], {
    error: unionError('must be one of none, auto, required, or an object'),
  })
  .optional();

/** `tools` items only need a `type`; their inner shapes are the provider's concern. */
export const tools = z.array(z.looseObject({ type: z.string() })).optional();

/** A model id; any non-empty string, since providers bring their own ids. */
export const modelId = z.string().min(1);

/** Rules that span two fields; zod runs them once each field is well-typed. */
export function requireStreamForStreamOptions(
  body: { stream?: boolean | null | undefined; stream_options?: object | null | undefined },
  ctx: z.RefinementCtx,
): void {
  if (body.stream_options != null && body.stream !== true) {
    ctx.addIssue({ code: 'custom', path: ['stream_options'], message: 'only allowed when stream is true' });
  }
}
