// Request body of POST /v1/embeddings (OpenAI's CreateEmbeddingRequest). OpenAI
// rejects empty input, so strings, arrays and token arrays must all be non-empty.
// The 2048-item cap is OpenAI's own and differs per provider, so it is not checked.

import { z } from 'zod';
import { modelId, unionError } from './shared-fields.ts';

const text = z.string().min(1);
const tokens = z.array(z.int().min(0)).min(1);

export const embeddingsBodySchema = z.looseObject({
  model: modelId,
  input: z.union([text, z.array(text).min(1), tokens, z.array(tokens).min(1)], {
    error: unionError(
      'must be a non-empty string, or a non-empty array of strings, token ids, or token id arrays',
    ),
  }),
  encoding_format: z.enum(['float', 'base64']).optional(),
  dimensions: z.int().min(1).optional(),
  user: z.string().optional(),
});

export type EmbeddingsBody = z.infer<typeof embeddingsBodySchema>;
