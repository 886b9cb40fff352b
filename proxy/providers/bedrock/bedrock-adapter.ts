import { GatewayError } from '../../errors.ts';
import { converseRequest } from './bedrock-converse-request.ts';
import { chatCompletionFromConverse, normaliseBedrockError } from './bedrock-converse-response.ts';
import { ConverseStreamTranslator } from './bedrock-converse-stream.ts';
import { bedrockEmbeddingsRequest, embeddingsFromBedrock } from './bedrock-embeddings.ts';
import { bedrockOptionsOf, resolveBedrockOptions } from './bedrock-options.ts';
import { signBedrockRequest } from './bedrock-signing.ts';
import { BedrockInvokeTranslator, bedrockInvokeAnswer, bedrockInvokeBody, bedrockInvokePath, isBedrockClaude } from './bedrock-invoke-claude.ts';
import type { PlanInput, ProviderAdapter, ProviderFamily, UpstreamRequestPlan } from '../provider-adapter.ts';

// AWS Bedrock (`bedrock`, the spec's cloudC), on the bedrock-runtime API:
//   chat        → POST /model/{modelId}/converse | /converse-stream (binary event stream)
//   embeddings  → POST /model/{modelId}/invoke (Titan or Cohere body)
//   messages    → Claude: InvokeModel in the Anthropic format (bedrock-invoke-claude.ts)
// Every call is SigV4-signed (service "bedrock") for the host it goes to; a custom host
// replaces the origin. The model id (which may be an inference-profile ARN) is one
// percent-encoded path segment.

const PROVIDER = 'bedrock';
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}$/;

type Json = Record<string, unknown>;

export function bedrockPath(endpoint: PlanInput['endpoint'], model: string, stream: boolean): string {
  if (endpoint === 'messages' || endpoint === 'messages.count_tokens') return bedrockInvokePath(endpoint, model, stream);
  const action = endpoint === 'embeddings' ? 'invoke' : stream ? 'converse-stream' : 'converse';
  return `/model/${encodeURIComponent(model)}/${action}`;
}

export function bedrockBody(endpoint: PlanInput['endpoint'], body: Json, model: string): Json {
  if (endpoint === 'messages' || endpoint === 'messages.count_tokens') return bedrockInvokeBody(endpoint, body);
  return endpoint === 'embeddings' ? bedrockEmbeddingsRequest(body, model) : converseRequest(body);
}

export const bedrockAdapter: ProviderAdapter = {
  family: PROVIDER,
  supportsEndpoint: (endpoint) => endpoint === 'chat.completions' || endpoint === 'embeddings' || endpoint === 'messages' || endpoint === 'messages.count_tokens',
  async planRequest({ target, endpoint, body }: PlanInput): Promise<UpstreamRequestPlan> {
    const options = bedrockOptionsOf(target.options);
    const model = modelOf(body);
    const stream = (endpoint === 'chat.completions' || endpoint === 'messages') && body['stream'] === true;
    const url = target.baseUrl + bedrockPath(endpoint, model, stream);
    const payload = JSON.stringify(bedrockBody(endpoint, body, model));
    const headers = await signBedrockRequest(
      {
        url,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json',
        },
        body: payload,
      },
      options.credentials,
      options.region,
    );
    return { url, method: 'POST', headers, body: payload };
  },
  transformResponse(endpoint, response, request) {
    return endpoint === 'embeddings' ? embeddingsFromBedrock(response, request) : chatCompletionFromConverse(response, request);
  },
  createStreamTranslator: (_endpoint, request) => new ConverseStreamTranslator(request),
  // Its API has no OpenAI-form files, batches or fine-tuning routes to forward to.
  forward: undefined,
  normaliseError: normaliseBedrockError,
  // Claude models take /v1/messages natively through InvokeModel; others are translated.
  nativeMessages: {
    accepts: (body) => isBedrockClaude(body['model']),
    transformResponse: bedrockInvokeAnswer,
    createStreamTranslator: () => new BedrockInvokeTranslator(),
  },
};

function modelOf(body: Json): string {
  const model = body['model'];
  if (typeof model !== 'string' || !MODEL_ID.test(model) || model.includes('..')) {
    throw new GatewayError('AIGW_ERR_INVALID_BODY', 'model: must be a Bedrock model id or inference profile ARN.', { param: 'model' });
  }
  return model;
}

export const bedrockFamily: ProviderFamily = {
  name: PROVIDER,
  baseUrl: undefined,
  adapter: bedrockAdapter,
  requiresApiKey: false,
  resolveOptions: resolveBedrockOptions,
};
