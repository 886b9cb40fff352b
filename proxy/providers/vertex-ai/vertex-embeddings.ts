import { tokenCountOr } from '../../accounting/token-count.ts';
import { GatewayError } from '../../errors.ts';

// Embeddings on Vertex AI: the text-embedding models' `:predict` method.
//   request  {instances:[{content, task_type?}], parameters:{outputDimensionality?}}
//   response {predictions:[{embeddings:{values, statistics:{token_count}}}]}
// The OpenAI SDKs ask for `encoding_format: "base64"` by default and decode it; the list is
// answered in the format asked for (base64 = little-endian float32, as OpenAI sends).

type Json = Record<string, unknown>;

/** Text inputs of an embeddings body; token-id inputs are an OpenAI-only feature. */
export function embeddingTexts(input: unknown, provider: string): string[] {
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.every((item) => typeof item === 'string')) return input as string[];
  throw new GatewayError('AIGW_ERR_INVALID_BODY', `input: ${provider} embeds text only; token id arrays are not supported.`, {
    param: 'input',
  });
}

export function vertexEmbeddingsRequest(body: Json): Json {
  const taskType = typeof body['task_type'] === 'string' ? body['task_type'] : undefined;
  const instances = embeddingTexts(body['input'], 'vertex-ai').map((content) =>
    taskType === undefined ? { content } : { content, task_type: taskType },
  );
  const request: Json = { instances };
  if (typeof body['dimensions'] === 'number') request['parameters'] = { outputDimensionality: body['dimensions'] };
  return request;
}

export function embeddingsFromVertex(response: unknown, request: Json): Json {
  const predictions = asArray(asRecord(response)?.['predictions']);
  let promptTokens = 0;
  const vectors = predictions.map((prediction) => {
    const embeddings = asRecord(asRecord(prediction)?.['embeddings']);
    const tokens = asRecord(embeddings?.['statistics'])?.['token_count'];
    promptTokens += tokenCountOr(tokens, 0);
    return asArray(embeddings?.['values']).filter((value): value is number => typeof value === 'number');
  });
  return openaiEmbeddingList(vectors, request, promptTokens);
}

/** The OpenAI embeddings list, each vector as floats or base64 per the request's encoding_format. */
export function openaiEmbeddingList(vectors: number[][], request: Json, promptTokens: number): Json {
  const base64 = request['encoding_format'] === 'base64';
  return {
    object: 'list',
    data: vectors.map((vector, index) => ({
      object: 'embedding',
      index,
      embedding: base64 ? float32Base64(vector) : vector,
    })),
    model: typeof request['model'] === 'string' ? request['model'] : '',
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

/** Little-endian float32 bytes, base64-encoded (OpenAI's `encoding_format: "base64"`). */
export function float32Base64(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
