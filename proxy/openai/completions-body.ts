// Request body of POST /v1/completions (OpenAI's CreateCompletionRequest, see the
// spec's /completions table and Limits). Its sampling fields are shared-fields.ts's.
//
// Objects are loose: unknown fields pass through untouched, because providers add
// their own parameters and the gateway forwards the body as received.

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
  topP,
  unionError,
} from './shared-fields.ts';

const tokenId = z.int().min(0);

export const completionsBodySchema = z
  .looseObject({
    model: modelId,
    // null is allowed: the model then starts from the beginning of a new document.
    prompt: z.union(
      [z.string(), z.array(z.string()), z.array(tokenId).min(1), z.array(z.array(tokenId).min(1)).min(1)],
      {
        error: unionError(
          'must be a string, an array of strings, an array of token ids, or an array of token id arrays',
        ),
      },
    ).nullable(),
    best_of: z.int().min(0).max(20).nullable().optional(),
    echo: z.boolean().nullable().optional(),
    frequency_penalty: penalty,
    logit_bias: logitBias,
    logprobs: z.int().min(0).max(5).nullable().optional(),
    max_tokens: tokenLimit,
    n: choiceCount,
    presence_penalty: penalty,
    seed,
    stop,
    stream,
    stream_options: streamOptions,
    suffix: z.string().nullable().optional(),
    temperature,
    top_p: topP,
    user: z.string().optional(),
  })
  .superRefine((body, ctx) => {
    const { best_of: bestOf, n } = body;
    if (bestOf != null && n != null && bestOf <= n) {
      ctx.addIssue({ code: 'custom', path: ['best_of'], message: 'must be greater than n' });
    }
    // Candidates are ranked after generation, so they cannot be streamed.
    if (bestOf != null && bestOf > 1 && body.stream === true) {
      ctx.addIssue({ code: 'custom', path: ['best_of'], message: 'must be at most 1 when stream is true' });
    }
    requireStreamForStreamOptions(body, ctx);
  });

export type CompletionsBody = z.infer<typeof completionsBodySchema>;
