import { GatewayError } from '../../errors.ts';
import { toAnthropicRequest } from './anthropic-request.ts';
import { fromAnthropicMessage, normaliseAnthropicError } from './anthropic-response.ts';
import { createAnthropicStreamTranslator } from './anthropic-stream.ts';
import { ANTHROPIC_VERSION, betaList, clientAnthropicHeaders } from './anthropic-wire.ts';
import { forwardedUrl } from '../openai/openai-adapter.ts';
import type {
  ForwardedCall,
  ForwardedRequest,
  PlanInput,
  ProviderAdapter,
  ProviderFamily,
  ResolvedTarget,
  ResolveOptionsInput,
  UpstreamRequestPlan,
} from '../provider-adapter.ts';

// Anthropic (`anthropic`): chat completions over the Messages API, and /v1/messages and
// /v1/messages/count_tokens natively. The client's token arrives as `Authorization: Bearer`
// (or x-api-key on /v1/messages) and is sent as `x-api-key`; other endpoints get the
// gateway's 400 naming provider and endpoint.
// Saved provider options: `version` (anthropic-version, default 2023-06-01) and
// `beta` (string or list, sent as anthropic-beta).

export const anthropicAdapter: ProviderAdapter = {
  family: 'anthropic',
  supportsEndpoint: (endpoint) => endpoint === 'chat.completions' || endpoint === 'messages' || endpoint === 'messages.count_tokens',
  planRequest({ target, endpoint, body, bodyChanged }: PlanInput): UpstreamRequestPlan {
    const version = target.options['version'];
    const beta = target.options['beta'];
    if (endpoint === 'messages' || endpoint === 'messages.count_tokens') {
      // Native: the client's bytes go as they came; its version and betas win over the saved ones.
      const client = clientAnthropicHeaders(body);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'anthropic-version': client.version ?? (typeof version === 'string' ? version : ANTHROPIC_VERSION),
      };
      const betas = betaList(typeof beta === 'string' ? beta : undefined, client.betas);
      if (betas.length > 0) headers['anthropic-beta'] = betas.join(',');
      if (target.apiKey !== undefined && target.apiKey !== '') headers['x-api-key'] = target.apiKey;
      const path = endpoint === 'messages' ? '/messages' : '/messages/count_tokens';
      return { url: `${target.baseUrl}${path}`, method: 'POST', headers, body: bodyChanged ? JSON.stringify(body) : undefined };
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'anthropic-version': typeof version === 'string' ? version : ANTHROPIC_VERSION,
    };
    if (typeof beta === 'string') headers['anthropic-beta'] = beta;
    if (target.apiKey !== undefined && target.apiKey !== '') headers['x-api-key'] = target.apiKey;
    return {
      url: `${target.baseUrl}/messages`,
      method: 'POST',
      headers,
      body: JSON.stringify(toAnthropicRequest(body)),
    };
  },
  transformResponse: (_endpoint, body, request) => fromAnthropicMessage(body, request),
  createStreamTranslator: (_endpoint, request) => createAnthropicStreamTranslator(request),
  // Of the forwarded routes, Anthropic serves only its model list (files, batches and
  // fine-tuning have no OpenAI form there).
  forward: forwardAnthropicModels,
  forwardsRoute: (route) => /^\/v1\/models(?:\/|$)/.test(route),
  normaliseError: normaliseAnthropicError,
  nativeMessages: { accepts: () => true },
};

const MODELS_PATH = /^models(?:\/[^/]+)?$/;

function forwardAnthropicModels(target: ResolvedTarget, call: ForwardedCall): ForwardedRequest {
  if (call.method !== 'GET' || !MODELS_PATH.test(call.path)) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no /v1/${call.path} endpoint the gateway can forward to.`, {
      param: 'x-gateway-provider',
    });
  }
  const version = target.options['version'];
  const headers: Record<string, string> = { 'anthropic-version': typeof version === 'string' ? version : ANTHROPIC_VERSION };
  if (target.apiKey !== undefined && target.apiKey !== '') headers['x-api-key'] = target.apiKey;
  return { url: forwardedUrl(target.baseUrl, call.path, call.query), method: 'GET', headers, body: null };
}

function resolveAnthropicOptions({ saved }: ResolveOptionsInput): { options: Record<string, unknown> } {
  const options: Record<string, unknown> = {};
  const raw = saved?.options ?? {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'version' && typeof value === 'string') options['version'] = value;
    else if (key === 'beta' && (typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string')))) {
      options['beta'] = Array.isArray(value) ? value.join(',') : value;
    } else {
      throw new GatewayError(
        'AIGW_ERR_INVALID_CONFIG',
        `providers "${saved?.slug ?? ''}" options.${key}: anthropic accepts options version (string) and beta (string or list).`,
        { param: 'options' },
      );
    }
  }
  return { options };
}

export const anthropicFamily: ProviderFamily = {
  name: 'anthropic',
  baseUrl: 'https://api.anthropic.com/v1',
  adapter: anthropicAdapter,
  resolveOptions: resolveAnthropicOptions,
};
