import type { ProviderName } from '../config/provider-names.ts';
import { GatewayError } from '../errors.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { anthropicFamily } from './anthropic/anthropic-adapter.ts';
import { azureOpenAIFamily } from './azure-openai/azure-openai-adapter.ts';
import { bedrockFamily } from './bedrock/bedrock-adapter.ts';
import { openaiCompatibleAdapter } from './openai/openai-adapter.ts';
import type { PlanInput, ProviderAdapter, ProviderFamily } from './provider-adapter.ts';
import { vertexFamily } from './vertex-ai/vertex-adapter.ts';

// Providers as data: an OpenAI-compatible host is a name, a base URL and the endpoints it
// serves. Hosts without a public URL (ollama, vllm, lm-studio) need a custom host.
// Families with their own wire format register their ProviderFamily in FAMILIES.

const ALL: ReadonlySet<InferenceEndpoint> = new Set(['chat.completions', 'completions', 'embeddings', 'responses']);
const CHAT_ONLY: ReadonlySet<InferenceEndpoint> = new Set(['chat.completions']);
const CHAT_AND_EMBEDDINGS: ReadonlySet<InferenceEndpoint> = new Set(['chat.completions', 'embeddings']);
const CHAT_COMPLETIONS_EMBEDDINGS: ReadonlySet<InferenceEndpoint> = new Set([
  'chat.completions',
  'completions',
  'embeddings',
]);

type NamedFamily = ProviderFamily & { readonly name: ProviderName };

const openaiFull = openaiCompatibleAdapter(ALL);
const compatible = openaiCompatibleAdapter(CHAT_COMPLETIONS_EMBEDDINGS);

// Each name is one of config/provider-names.ts (what a state may name); a test holds that list equal to the catalog.
const OPENAI_COMPATIBLE: readonly NamedFamily[] = [
  { name: 'openai', baseUrl: 'https://api.openai.com/v1', adapter: openaiFull },
  { name: 'groq', baseUrl: 'https://api.groq.com/openai/v1', adapter: openaiCompatibleAdapter(CHAT_ONLY) },
  { name: 'together-ai', baseUrl: 'https://api.together.xyz/v1', adapter: compatible },
  { name: 'mistral-ai', baseUrl: 'https://api.mistral.ai/v1', adapter: openaiCompatibleAdapter(CHAT_AND_EMBEDDINGS) },
  { name: 'deepseek', baseUrl: 'https://api.deepseek.com/v1', adapter: openaiCompatibleAdapter(CHAT_ONLY) },
  { name: 'fireworks-ai', baseUrl: 'https://api.fireworks.ai/inference/v1', adapter: compatible },
  { name: 'openrouter', baseUrl: 'https://openrouter.ai/api/v1', adapter: openaiCompatibleAdapter(new Set(['chat.completions', 'completions'])) },
  { name: 'perplexity-ai', baseUrl: 'https://api.perplexity.ai', adapter: openaiCompatibleAdapter(CHAT_ONLY) },
  { name: 'x-ai', baseUrl: 'https://api.x.ai/v1', adapter: openaiCompatibleAdapter(CHAT_AND_EMBEDDINGS) },
  { name: 'ollama', baseUrl: undefined, adapter: compatible, requiresApiKey: false },
  { name: 'vllm', baseUrl: undefined, adapter: compatible, requiresApiKey: false },
  { name: 'lm-studio', baseUrl: undefined, adapter: compatible, requiresApiKey: false },
];

/** Families with their own wire format (Azure OpenAI, Anthropic, Vertex AI, Bedrock…). */
const FAMILIES: readonly ProviderFamily[] = [
  azureOpenAIFamily,
  anthropicFamily,
  vertexFamily,
  bedrockFamily,
];

/**
 * Where a client protocol the family may not speak (Anthropic Messages) puts its per-request
 * translator on the body the walk forwards: never serialised, kept by override_params'
 * spread. The ingress passes it; providers never import an ingress.
 */
export const CLIENT_PROTOCOL: unique symbol = Symbol('aigateway.clientProtocol');

/** What an ingress tells the catalog's adapters, per request. */
export interface ClientProtocolPlanning {
  /** The input `adapter` plans: `input` itself when the family speaks the protocol, else the body translated (once) for it; a 400 when it cannot be. */
  planInputFor(adapter: ProviderAdapter, input: PlanInput): PlanInput;
}

/** Endpoints of a client protocol a family without them serves through their OpenAI counterpart. */
const SERVED_THROUGH: Readonly<Partial<Record<InferenceEndpoint, InferenceEndpoint>>> = {
  messages: 'chat.completions',
  'messages.count_tokens': 'chat.completions',
};

/** A family's adapter, able to plan a request of any client protocol whose ingress came with it. */
function servingClientProtocols(inner: ProviderAdapter): ProviderAdapter {
  return {
    ...inner,
    supportsEndpoint(endpoint) {
      if (inner.supportsEndpoint(endpoint)) return true;
      const through = SERVED_THROUGH[endpoint];
      return through !== undefined && inner.supportsEndpoint(through);
    },
    planRequest(input) {
      const protocol = (input.body as { [CLIENT_PROTOCOL]?: ClientProtocolPlanning })[CLIENT_PROTOCOL];
      if (protocol !== undefined) return inner.planRequest(protocol.planInputFor(inner, input));
      if (!inner.supportsEndpoint(input.endpoint)) {
        throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${input.target.provider}" has no ${input.endpoint} endpoint, and no client protocol translated the body for it.`);
      }
      return inner.planRequest(input);
    },
  };
}

// Every family also serves /v1/messages: natively where it can, else translated by the ingress.
const BY_NAME: ReadonlyMap<string, ProviderFamily> = new Map(
  [...OPENAI_COMPATIBLE, ...FAMILIES].map((entry) => [entry.name, { ...entry, adapter: servingClientProtocols(entry.adapter) }]),
);

export function catalogEntry(name: string): ProviderFamily | undefined {
  return BY_NAME.get(name);
}

/**
 * Any other provider name behind a custom host is treated as OpenAI-compatible: the spec
 * lets users name any provider "when unsure".
 */
export const GENERIC_COMPATIBLE_ADAPTER: ProviderAdapter = servingClientProtocols(openaiFull);

export function catalogNames(): string[] {
  return [...BY_NAME.keys()];
}
