import { GatewayError, type OpenAIErrorBody } from '../../errors.ts';
import type { InferenceEndpoint } from '../../openai/inference-endpoint.ts';
import { toAnthropicRequest } from '../anthropic/anthropic-request.ts';
import { fromAnthropicMessage, normaliseAnthropicError } from '../anthropic/anthropic-response.ts';
import { createAnthropicStreamTranslator } from '../anthropic/anthropic-stream.ts';
import { betaList, clientAnthropicHeaders } from '../anthropic/anthropic-wire.ts';
import type { PlanInput, ProviderAdapter, ProviderFamily, UpstreamRequestPlan } from '../provider-adapter.ts';
import { embeddingsFromVertex, vertexEmbeddingsRequest } from './vertex-embeddings.ts';
import { normaliseVertexError } from './vertex-errors.ts';
import { geminiRequest } from './vertex-gemini-request.ts';
import { chatCompletionFromGemini } from './vertex-gemini-response.ts';
import { GeminiStreamTranslator } from './vertex-gemini-stream.ts';
import { resolveVertexOptions, vertexOptionsOf } from './vertex-options.ts';
import { SHARED_TOKEN_CACHE, type AccessTokenCache } from './vertex-token-cache.ts';

// Google Vertex AI (`vertex-ai`, the spec's cloudB). One model id picks the API:
//   chat, Gemini models   → publishers/google/models/{m}:generateContent | :streamGenerateContent?alt=sse
//   chat, claude* models  → publishers/anthropic/models/{m}:rawPredict | :streamRawPredict
//                           (Anthropic Messages body with anthropic_version vertex-2023-10-16)
//   embeddings            → publishers/google/models/{m}:predict
// Authorization is a Bearer OAuth token: from the service account (cached, see
// vertex-token-cache.ts) or as supplied by the caller. A custom host replaces the origin.

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';
const PROVIDER = 'vertex-ai';
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

type Json = Record<string, unknown>;
type VertexApi = 'gemini' | 'anthropic' | 'embeddings';

/** Which Vertex API serves a request. */
export function vertexApiFor(endpoint: InferenceEndpoint, model: string): VertexApi {
  if (endpoint === 'embeddings') return 'embeddings';
  if (endpoint === 'messages.count_tokens') return 'anthropic';
  return model.startsWith('claude') ? 'anthropic' : 'gemini';
}

/** The upstream URL (path and query) below the origin. */
export function vertexPath(api: VertexApi, projectId: string, region: string, model: string, stream: boolean): string {
  const publisher = api === 'anthropic' ? 'anthropic' : 'google';
  const method =
    api === 'embeddings'
      ? 'predict'
      : api === 'anthropic'
        ? stream
          ? 'streamRawPredict'
          : 'rawPredict'
        : stream
          ? 'streamGenerateContent?alt=sse'
          : 'generateContent';
  return `/v1/projects/${projectId}/locations/${region}/publishers/${publisher}/models/${model}:${method}`;
}

/** The upstream body for a request, by API. */
export function vertexBody(api: VertexApi, body: Json): Json {
  if (api === 'embeddings') return vertexEmbeddingsRequest(body);
  if (api === 'gemini') return geminiRequest(body);
  // Anthropic on Vertex: the model is in the URL and the version in the body.
  const { model: _model, ...request } = toAnthropicRequest(body);
  return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...request };
}

export function vertexAdapter(tokens: AccessTokenCache = SHARED_TOKEN_CACHE): ProviderAdapter {
  return {
    family: PROVIDER,
    supportsEndpoint: (endpoint) => endpoint === 'chat.completions' || endpoint === 'embeddings' || endpoint === 'messages' || endpoint === 'messages.count_tokens',
    async planRequest({ target, endpoint, body, dispatcher }: PlanInput): Promise<UpstreamRequestPlan> {
      const options = vertexOptionsOf(target.options);
      const model = modelOf(body);
      if (endpoint === 'messages' || endpoint === 'messages.count_tokens') {
        const token = options.serviceAccount !== undefined ? await tokens.token(options.serviceAccount, dispatcher) : options.accessToken;
        return nativeMessagesPlan(target.baseUrl, endpoint, body, options.projectId, options.region, model, token);
      }
      const api = vertexApiFor(endpoint, model);
      const upstreamBody = vertexBody(api, body);
      const token = options.serviceAccount !== undefined ? await tokens.token(options.serviceAccount, dispatcher) : options.accessToken;
      return {
        url: target.baseUrl + vertexPath(api, options.projectId, options.region, model, body['stream'] === true),
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token ?? ''}` },
        body: JSON.stringify(upstreamBody),
      };
    },
    transformResponse(endpoint, response, request) {
      const api = vertexApiFor(endpoint, modelOf(request));
      if (api === 'embeddings') return embeddingsFromVertex(response, request);
      if (api === 'anthropic') return fromAnthropicMessage(response, request);
      return chatCompletionFromGemini(response, request);
    },
    createStreamTranslator(endpoint, request) {
      return vertexApiFor(endpoint, modelOf(request)) === 'anthropic'
        ? createAnthropicStreamTranslator(request, PROVIDER)
        : new GeminiStreamTranslator(request, PROVIDER);
    },
    // Claude models take /v1/messages natively (raw Anthropic events); Gemini is translated.
    nativeMessages: { accepts: (body) => typeof body['model'] === 'string' && body['model'].startsWith('claude') },
    // Its API has no OpenAI-form files, batches or fine-tuning routes to forward to.
    forward: undefined,
    normaliseError(status: number, bodyText: string, provider: string): OpenAIErrorBody {
      // Claude models answer in Anthropic's error shape, Google's front end in its own.
      return /^\s*\{\s*"type"\s*:\s*"error"/.test(bodyText)
        ? normaliseAnthropicError(status, bodyText, provider)
        : normaliseVertexError(status, bodyText, provider);
    },
  };
}

/**
 * Claude on Vertex in the Messages format: the body minus `model` plus anthropic_version,
 * betas as the anthropic-beta header. count_tokens goes to the `count-tokens` model with
 * the model named in the body.
 */
function nativeMessagesPlan(
  baseUrl: string,
  endpoint: 'messages' | 'messages.count_tokens',
  body: Json,
  projectId: string,
  region: string,
  model: string,
  token: string | undefined,
): UpstreamRequestPlan {
  const { model: _model, ...rest } = body;
  const payload = endpoint === 'messages' ? { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest } : { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest, model };
  const path =
    endpoint === 'messages'
      ? vertexPath('anthropic', projectId, region, model, body['stream'] === true)
      : `/v1/projects/${projectId}/locations/${region}/publishers/anthropic/models/count-tokens:rawPredict`;
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${token ?? ''}` };
  const betas = betaList(clientAnthropicHeaders(body).betas);
  if (betas.length > 0) headers['anthropic-beta'] = betas.join(',');
  return { url: baseUrl + path, method: 'POST', headers, body: JSON.stringify(payload) };
}

function modelOf(body: Json): string {
  const model = body['model'];
  if (typeof model !== 'string' || !MODEL_ID.test(model)) {
    throw new GatewayError('AIGW_ERR_INVALID_BODY', 'model: must be a Vertex AI model id such as gemini-2.0-flash.', { param: 'model' });
  }
  return model;
}

export const vertexFamily: ProviderFamily = {
  name: PROVIDER,
  baseUrl: undefined,
  adapter: vertexAdapter(),
  requiresApiKey: false,
  resolveOptions: resolveVertexOptions,
};
