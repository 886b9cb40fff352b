// Request body of POST /v1/responses (OpenAI's CreateResponse). The spec lists four
// model ids, but OpenAI types `model` as any model id and the gateway routes to many
// providers, so any non-empty string is accepted. `include` takes OpenAI's full
// IncludeEnum, a superset of the spec's three values.

import { z } from 'zod';
import { modelId, temperature, toolChoice, tools, topP, unionError } from './shared-fields.ts';

export const RESPONSE_INCLUDE_VALUES = [
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
] as const;

/** OpenAI's Metadata: at most 16 pairs, keys up to 64 characters, string values up to 512. */
export const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((pairs) => Object.keys(pairs).length <= 16, 'at most 16 pairs')
  .nullable()
  .optional();

const nullableBoolean = z.boolean().nullable().optional();

export const responsesBodySchema = z.looseObject({
  model: modelId,
  // Item shapes (text, image, file inputs) are the provider's to check.
  input: z.union([z.string(), z.array(z.unknown())], { error: unionError('must be a string or an array') }),
  metadata,
  temperature,
  top_p: topP,
  user: z.string().optional(),
  previous_response_id: z.string().nullable().optional(),
  reasoning: z.looseObject({}).nullable().optional(),
  max_output_tokens: z.int().min(0).nullable().optional(),
  instructions: z.string().nullable().optional(),
  text: z.looseObject({}).optional(),
  tools,
  tool_choice: toolChoice,
  truncation: z.enum(['auto', 'disabled']).nullable().optional(),
  include: z.array(z.enum(RESPONSE_INCLUDE_VALUES)).nullable().optional(),
  parallel_tool_calls: nullableBoolean,
  store: nullableBoolean,
  stream: nullableBoolean,
});

export type ResponsesBody = z.infer<typeof responsesBodySchema>;
