// A stored prompt: an entry of the state file's `prompts:` list (the Prompt CRD in a
// cluster). Message contents are Mustache templates; `parameters` are the prompt's
// default hyperparameters — the spec's "Rendered prompt data" parameters, with the
// same bounds the chat-completions endpoint enforces, so a prompt that loads renders
// into a request the gateway accepts.
//
// Entries are strict (an unknown key is an error, like the rest of the state file), and
// templates are parsed at load, so a template with a syntax error is reported with its
// path by `aigateway validate` instead of failing at render time.

import Mustache from 'mustache';
import type { TemplateSpans } from 'mustache';
import { z } from 'zod';
import { CHAT_MESSAGE_ROLES } from '../openai/chat-completions-body.ts';
import {
  choiceCount,
  logitBias,
  modelId,
  penalty,
  seed,
  stop,
  stream,
  streamOptions,
  temperature,
  tokenLimit,
  toolChoice,
  topP,
} from '../openai/shared-fields.ts';

/** Fixed delimiters: a process-wide change to Mustache.tags must not reinterpret prompts. */
const TEMPLATE_TAGS: [string, string] = ['{{', '}}'];

// A private writer: parsing through Mustache's default writer would keep every template
// string in its global cache for the life of the process (prompts come and go with
// reloads). Compiled templates are cached per prompt by render-prompt.ts instead.
const templateParser = new Mustache.Writer();

/**
 * Parses a message template into Mustache tokens. Throws on a syntax error
 * (`Unclosed section "tone" at 12`). Every call returns fresh tokens the caller owns.
 */
export function parsePromptTemplate(template: string): TemplateSpans {
  try {
    return templateParser.parse(template, TEMPLATE_TAGS) as TemplateSpans;
  } finally {
    templateParser.clearCache();
  }
}

function usesPartials(tokens: TemplateSpans): boolean {
  return tokens.some((token) => token[0] === '>' || (Array.isArray(token[4]) && usesPartials(token[4])));
}

/** Why a template cannot be used, or undefined when it can. */
function templateProblem(template: string): string | undefined {
  let tokens: TemplateSpans;
  try {
    tokens = parsePromptTemplate(template);
  } catch (error) {
    return `invalid Mustache template: ${error instanceof Error ? error.message : String(error)}`;
  }
  return usesPartials(tokens) ? 'partials ({{> name}}) are not supported in prompt templates' : undefined;
}

const messageTemplate = z.string().superRefine((template, ctx) => {
  const problem = templateProblem(template);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

export const PromptMessageSchema = z.strictObject({
  role: z.enum(CHAT_MESSAGE_ROLES).describe('system, developer, user, assistant, tool or function.'),
  /** A Mustache template: `Hello {{name}}`. */
  content: messageTemplate.describe('A Mustache template, e.g. "Hello {{name}}" (no partials).'),
  /** Sent as the message's `name`, verbatim (not a template). */
  name: z.string().min(1).optional().describe("Sent as the message's name, verbatim (not a template)."),
});

const jsonSchemaObject = z.looseObject({});

/**
 * The hyperparameters a prompt may carry as defaults and a render request may give at
 * its root: exactly the spec's rendered-prompt parameters (besides model and messages).
 */
export const PromptParametersSchema = z.strictObject({
  frequency_penalty: penalty.describe('Default frequency_penalty (-2 to 2).'),
  logit_bias: logitBias.describe('Default logit_bias: token id to bias (-100 to 100).'),
  logprobs: z.boolean().nullable().optional().describe('Return log probabilities of the output tokens.'),
  top_logprobs: z.int().min(0).max(20).nullable().optional().describe('Most likely tokens returned per position (0 to 20).'),
  max_tokens: tokenLimit.describe('Default limit of generated tokens.'),
  n: choiceCount.describe('Choices to generate.'),
  presence_penalty: penalty.describe('Default presence_penalty (-2 to 2).'),
  response_format: z.looseObject({ type: z.string().min(1).describe('text, json_object or json_schema.') }).nullable().optional().describe('Output format, e.g. {type: json_object}.'),
  seed: seed.describe('Seed for deterministic sampling, where the provider supports it.'),
  stop: stop.describe('Stop sequences.'),
  stream: stream.describe('Stream the answer by default.'),
  stream_options: streamOptions.describe('Streaming options (include_usage).'),
  thinking: z
    .looseObject({ type: z.string().min(1).describe('enabled or disabled.'), budget_tokens: z.int().min(0).optional().describe('Most tokens spent thinking.') })
    .nullable().describe('Extended thinking settings (type, budget_tokens), where the provider supports it.')
    .optional(),
  temperature: temperature.describe('Default sampling temperature (0 to 2).'),
  top_p: topP.describe('Default nucleus sampling probability (0 to 1).'),
  tools: z
    .array(
      z.looseObject({
        type: z.string().min(1).describe('function.'),
        function: z
          .looseObject({
            name: z.string().min(1).describe('Function name.'),
            description: z.string().optional().describe('What the function does, for the model.'),
            parameters: jsonSchemaObject.optional().describe('JSON Schema of the arguments.'),
            strict: z.boolean().nullable().optional().describe('Arguments must follow the schema exactly.'),
          })
          .optional()
          .describe('The function the model may call.'),
      }),
    )
    .optional().describe('Tools (functions) the model may call.'),
  tool_choice: toolChoice.describe('none, auto, required or a specific tool.'),
  parallel_tool_calls: z.boolean().nullable().optional().describe('Allow several tool calls in one answer.'),
  user: z.string().optional().describe('End-user id passed to the provider.'),
  function_call: z.union([z.enum(['none', 'auto']), z.looseObject({ name: z.string().min(1) })]).optional().describe('Legacy: none, auto or {name} of a function.'),
  functions: z
    .array(
      z.looseObject({
        name: z.string().min(1).describe('Function name.'),
        description: z.string().optional().describe('What the function does, for the model.'),
        parameters: jsonSchemaObject.optional().describe('JSON Schema of the arguments.'),
      }),
    )
    .optional().describe('Legacy functions the model may call.'),
});

/** The parameter names, in the spec's order: the keys a render request may set at its root. */
export const PROMPT_PARAMETER_KEYS: readonly string[] = Object.freeze(Object.keys(PromptParametersSchema.shape));

/**
 * One prompt of the state file.
 *
 * @example
 * { id: 'welcome', model: 'gpt-4o-mini',
 *   messages: [{ role: 'system', content: 'You are {{tone}}.' }, { role: 'user', content: '{{question}}' }],
 *   parameters: { temperature: 0.2 } }
 */
export const PromptEntrySchema = z.strictObject({
  id: z.string().min(1),
  description: z.string().optional().describe('What the prompt is for.'),
  /** Optional: without it the caller's body or the routing config's override_params names the model. */
  model: modelId.optional().describe("Model to use; without it the request or the config's override_params names it."),
  messages: z.array(PromptMessageSchema).min(1).describe('The message templates, in order.'),
  parameters: PromptParametersSchema.default({}).describe('Default hyperparameters; a render request may override them.'),
});

export type PromptEntry = z.infer<typeof PromptEntrySchema>;
export type PromptMessage = z.infer<typeof PromptMessageSchema>;
export type PromptParameters = z.infer<typeof PromptParametersSchema>;
