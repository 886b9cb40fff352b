import type { InferenceEndpoint } from '../../openai/inference-endpoint.ts';
import type { ForwardedCall, ForwardedRequest, PlanInput, ProviderAdapter, ResolvedTarget, UpstreamRequestPlan } from '../provider-adapter.ts';
import { normaliseProviderError } from '../provider-errors.ts';

// The identity adapter: OpenAI and every OpenAI-compatible host. The body is forwarded
// untouched unless the gateway changed it (override_params); only the URL and the
// credential header are ours to set. Forwarded routes (files, batches, fine-tuning…) go
// to the same base URL with the same bearer credential.

export const OPENAI_ENDPOINT_PATHS: Readonly<Record<InferenceEndpoint, string>> = {
  'chat.completions': '/chat/completions',
  completions: '/completions',
  embeddings: '/embeddings',
  responses: '/responses',
  // Not served natively by OpenAI-format hosts: the messages ingress translates to chat.
  messages: '/chat/completions',
  'messages.count_tokens': '/chat/completions',
};

// The client's bytes forwarded as they are: the plan depends on the target and the endpoint
// alone, so it is made once per pair (targets live as long as their snapshot) and frozen —
// no headers object, URL or credential string per request.
const unchangedPlans = new WeakMap<ResolvedTarget, Partial<Record<InferenceEndpoint, UpstreamRequestPlan>>>();

function planOf(target: ResolvedTarget, endpoint: InferenceEndpoint, body: string | undefined): UpstreamRequestPlan {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...target.headers };
  if (target.apiKey !== undefined && target.apiKey !== '') headers['authorization'] = `Bearer ${target.apiKey}`;
  return { url: target.baseUrl + OPENAI_ENDPOINT_PATHS[endpoint], method: 'POST', headers, body };
}

export function openaiCompatibleAdapter(supported: ReadonlySet<InferenceEndpoint>): ProviderAdapter {
  return {
    family: 'openai',
    supportsEndpoint: (endpoint) => supported.has(endpoint),
    planRequest({ target, endpoint, body, bodyChanged }: PlanInput): UpstreamRequestPlan {
      if (bodyChanged) return planOf(target, endpoint, JSON.stringify(body));
      let plans = unchangedPlans.get(target);
      if (plans === undefined) unchangedPlans.set(target, (plans = {}));
      let plan = plans[endpoint];
      if (plan === undefined) {
        const fresh = planOf(target, endpoint, undefined);
        plan = plans[endpoint] = Object.freeze({ ...fresh, headers: Object.freeze(fresh.headers) });
      }
      return plan;
    },
    forward: forwardOpenAICompatible,
    normaliseError: normaliseProviderError,
  };
}

function forwardOpenAICompatible(target: ResolvedTarget, call: ForwardedCall): ForwardedRequest {
  const headers: Record<string, string> = { ...target.headers, ...call.headers };
  if (target.apiKey !== undefined && target.apiKey !== '') headers['authorization'] = `Bearer ${target.apiKey}`;
  return { url: forwardedUrl(target.baseUrl, call.path, call.query), method: call.method, headers, body: call.body ?? null };
}

/** `{base}/{path}?{query}`: the OpenAI API's form, which Azure's data plane shares. */
export function forwardedUrl(base: string, path: string, query: URLSearchParams | undefined): URL {
  const search = query === undefined ? '' : query.toString();
  return new URL(`${base}/${path}${search === '' ? '' : `?${search}`}`);
}
