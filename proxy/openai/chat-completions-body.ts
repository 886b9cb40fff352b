// Request body of POST /v1/chat/completions: OpenAI's CreateChatCompletionRequest,
// kept practical. Bounds and nullability follow OpenAI; message content parts and tool
// shapes are left to the provider, which knows its own variants better than we do.

import { z } from 'zod';
import {
  choiceCount,
  logitBias,
  modelId,
  penalty,
  requireStreamForStreamOptions,
  seed,
  stop,
  stream,
  streamOptions,
  temperature,
  tokenLimit,
  toolChoice,
  tools,
  topP,
  unionError,
} from './shared-fields.ts';

export const CHAT_MESSAGE_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

const chatMessage = z.looseObject({
  role: z.enum(CHAT_MESSAGE_ROLES),
  // Assistant messages with tool calls carry no content, so it stays optional.
  content: z
    .union([z.string(), z.array(z.unknown()), z.null()], { error: unionError('must be a string, an array, or null') })
    .optional(),
});

export const chatCompletionsBodySchema = z
  .looseObject({
    model: modelId,
    messages: z.array(chatMessage).min(1),
    temperature,
    top_p: topP,
    frequency_penalty: penalty,
    presence_penalty: penalty,
    logit_bias: logitBias,
    n: choiceCount,
    logprobs: z.boolean().nullable().optional(),
    top_logprobs: z.int().min(0).max(20).nullable().optional(),
    max_tokens: tokenLimit,
    max_completion_tokens: tokenLimit,
    stop,
    stream,
    stream_options: streamOptions,
    seed,
    tools,
    tool_choice: toolChoice,
    user: z.string().optional(),
  })
  .superRefine(requireStreamForStreamOptions);

export type ChatCompletionsBody = z.infer<typeof chatCompletionsBodySchema>;
