import type { InferenceEndpoint } from '../endpoints/body-validation.ts';
import type { ProviderAdapter, ResolvedTarget, UpstreamRequestPlan } from './provider-adapter.ts';
import { normaliseProviderError } from './provider-errors.ts';

// The identity adapter: OpenAI and every OpenAI-compatible host. The body is forwarded
// untouched; only the URL and the credential header are ours to set.

const ENDPOINT_PATHS: Readonly<Record<InferenceEndpoint, string>> = {
  'chat.completions': '/chat/completions',
  completions: '/completions',
  embeddings: '/embeddings',
  responses: '/responses',
};

export function openaiCompatibleAdapter(supported: ReadonlySet<InferenceEndpoint>): ProviderAdapter {
  return {
    family: 'openai',
    supportsEndpoint: (endpoint) => supported.has(endpoint),
    planRequest(target: ResolvedTarget, endpoint: InferenceEndpoint): UpstreamRequestPlan {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...target.headers };
      if (target.apiKey !== undefined && target.apiKey !== '') headers['authorization'] = `Bearer ${target.apiKey}`;
      return { url: target.baseUrl + ENDPOINT_PATHS[endpoint], method: 'POST', headers };
    },
    normaliseError: normaliseProviderError,
  };
}
