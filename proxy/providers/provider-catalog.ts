import { withMessagesIngress } from '../anthropic-ingress/messages-adapter.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { anthropicFamily } from './anthropic/anthropic-adapter.ts';
import { azureOpenAIFamily } from './azure-openai/azure-openai-adapter.ts';
import { bedrockFamily } from './bedrock/bedrock-adapter.ts';
import { openaiCompatibleAdapter } from './openai/openai-adapter.ts';
import type { ProviderAdapter, ProviderFamily } from './provider-adapter.ts';
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

const openaiFull = openaiCompatibleAdapter(ALL);
const compatible = openaiCompatibleAdapter(CHAT_COMPLETIONS_EMBEDDINGS);

const OPENAI_COMPATIBLE: readonly ProviderFamily[] = [
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

// Every family also serves /v1/messages: natively where it can, else translated to chat.
const BY_NAME: ReadonlyMap<string, ProviderFamily> = new Map(
  [...OPENAI_COMPATIBLE, ...FAMILIES].map((entry) => [entry.name, { ...entry, adapter: withMessagesIngress(entry.adapter) }]),
);

export function catalogEntry(name: string): ProviderFamily | undefined {
  return BY_NAME.get(name);
}

/**
 * Any other provider name behind a custom host is treated as OpenAI-compatible: the spec
 * lets users name any provider "when unsure".
 */
export const GENERIC_COMPATIBLE_ADAPTER: ProviderAdapter = withMessagesIngress(openaiFull);

export function catalogNames(): string[] {
  return [...BY_NAME.keys()];
}
