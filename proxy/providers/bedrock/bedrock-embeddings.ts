import { GatewayError } from '../../errors.ts';
import { embeddingTexts, openaiEmbeddingList } from '../vertex-ai/vertex-embeddings.ts';

// Embeddings on Bedrock go through InvokeModel, whose body is the model vendor's own:
//   Titan  (amazon.titan-embed-*)  {inputText, dimensions?}  → {embedding, inputTextTokenCount}
//          one text per call, so a list of several inputs is a 400 naming `input`
//   Cohere (cohere.embed-*)        {texts, input_type, …}    → {embeddings: [[…]] | {float: [[…]]}}
//          Cohere's body carries no token counts (Bedrock puts them in the
//          x-amzn-bedrock-input-token-count response header, passed through to the client).

type Json = Record<string, unknown>;
export type EmbeddingVendor = 'titan' | 'cohere';

export function embeddingVendorOf(model: string): EmbeddingVendor {
  const bare = model.replace(/^[a-z]{2}\./, ''); // cross-region inference profile prefix (us., eu., …)
  if (bare.startsWith('amazon.titan-embed')) return 'titan';
  if (bare.startsWith('cohere.embed')) return 'cohere';
  throw new GatewayError(
    'AIGW_ERR_INVALID_BODY',
    `model: bedrock embeddings support Titan (amazon.titan-embed-*) and Cohere (cohere.embed-*) models, not "${model}".`,
    { param: 'model' },
  );
}

export function bedrockEmbeddingsRequest(body: Json, model: string): Json {
  const texts = embeddingTexts(body['input'], 'bedrock');
  const dimensions = body['dimensions'];
  if (embeddingVendorOf(model) === 'titan') {
    if (texts.length !== 1) {
      throw new GatewayError('AIGW_ERR_INVALID_BODY', 'input: Titan embedding models take one text per request.', { param: 'input' });
    }
    const request: Json = { inputText: texts[0] };
    if (typeof dimensions === 'number') {
      if (!model.includes('titan-embed-text-v2')) {
        throw new GatewayError('AIGW_ERR_INVALID_BODY', `dimensions: ${model} has a fixed size.`, { param: 'dimensions' });
      }
      request['dimensions'] = dimensions;
    }
    return request;
  }
  const request: Json = {
    texts,
    input_type: typeof body['input_type'] === 'string' ? body['input_type'] : 'search_document',
  };
  if (typeof body['truncate'] === 'string') request['truncate'] = body['truncate'];
  if (typeof dimensions === 'number') request['output_dimension'] = dimensions;
  return request;
}

export function embeddingsFromBedrock(response: unknown, request: Json): Json {
  const body = asRecord(response) ?? {};
  const model = typeof request['model'] === 'string' ? request['model'] : '';
  if (embeddingVendorOf(model) === 'titan') {
    const tokens = typeof body['inputTextTokenCount'] === 'number' ? body['inputTextTokenCount'] : 0;
    return openaiEmbeddingList([numbers(body['embedding'])], request, tokens);
  }
  const embeddings = body['embeddings'];
  const vectors = Array.isArray(embeddings) ? embeddings : asRecord(embeddings)?.['float'];
  return openaiEmbeddingList(Array.isArray(vectors) ? vectors.map(numbers) : [], request, 0);
}

function numbers(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((item): item is number => typeof item === 'number') : [];
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
