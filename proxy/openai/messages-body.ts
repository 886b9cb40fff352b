// Request bodies of POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages
// API). Only what routing and translation rely on is checked here: Anthropic adds block
// types and top-level fields often, so unknown ones pass to the provider untouched.

import { z } from 'zod';
import { modelId, unionError } from './shared-fields.ts';

const block = z.looseObject({ type: z.string().min(1) });

const content = z.union([z.string(), z.array(block).min(1)], { error: unionError('must be a string or a non-empty array of content blocks') });

const message = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content,
});

const system = z
  .union([z.string(), z.array(block)], { error: unionError('must be a string or an array of text blocks') })
  .optional();

const tool = z.looseObject({ name: z.string().min(1) });

const shared = {
  model: modelId,
  messages: z.array(message).min(1),
  system,
  tools: z.array(tool).optional(),
  tool_choice: z.looseObject({ type: z.string().min(1) }).optional(),
  thinking: z.looseObject({ type: z.string().min(1) }).optional(),
};

export const messagesBodySchema = z.looseObject({
  ...shared,
  max_tokens: z.int().min(1),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.int().min(0).optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({}).optional(),
});

export const countTokensBodySchema = z.looseObject(shared);

export type MessagesBody = z.infer<typeof messagesBodySchema>;
