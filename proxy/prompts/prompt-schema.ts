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
import { CHAT_MESSAGE_ROLES } from '../endpoints/chat-completions-body.ts';
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
} from '../endpoints/completions-body.ts';

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
  role: z.enum(CHAT_MESSAGE_ROLES),
  /** A Mustache template: `Hello {{name}}`. */
  content: messageTemplate,
  /** Sent as the message's `name`, verbatim (not a template). */
  name: z.string().min(1).optional(),
});

const jsonSchemaObject = z.looseObject({});

/**
 * The hyperparameters a prompt may carry as defaults and a render request may give at
 * its root: exactly the spec's rendered-prompt parameters (besides model and messages).
 */
export const PromptParametersSchema = z.strictObject({
  frequency_penalty: penalty,
  logit_bias: logitBias,
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  max_tokens: tokenLimit,
  n: choiceCount,
  presence_penalty: penalty,
  response_format: z.looseObject({ type: z.string().min(1) }).nullable().optional(),
  seed,
  stop,
  stream,
  stream_options: streamOptions,
  thinking: z
    .looseObject({ type: z.string().min(1), budget_tokens: z.int().min(0).optional() })
    .nullable()
    .optional(),
  temperature,
  top_p: topP,
  tools: z
    .array(
      z.looseObject({
        type: z.string().min(1),
        function: z
          .looseObject({
            name: z.string().min(1),
            description: z.string().optional(),
            parameters: jsonSchemaObject.optional(),
            strict: z.boolean().nullable().optional(),
          })
          .optional(),
      }),
    )
    .optional(),
  tool_choice: toolChoice,
  parallel_tool_calls: z.boolean().nullable().optional(),
  user: z.string().optional(),
  function_call: z.union([z.enum(['none', 'auto']), z.looseObject({ name: z.string().min(1) })]).optional(),
  functions: z
    .array(
      z.looseObject({
        name: z.string().min(1),
        description: z.string().optional(),
        parameters: jsonSchemaObject.optional(),
      }),
    )
    .optional(),
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
  description: z.string().optional(),
  /** Optional: without it the caller's body or the routing config's override_params names the model. */
  model: modelId.optional(),
  messages: z.array(PromptMessageSchema).min(1),
  parameters: PromptParametersSchema.default({}),
});

export type PromptEntry = z.infer<typeof PromptEntrySchema>;
export type PromptMessage = z.infer<typeof PromptMessageSchema>;
export type PromptParameters = z.infer<typeof PromptParametersSchema>;
