import type { InferenceEndpoint } from '../endpoints/body-validation.ts';
import { openaiCompatibleAdapter } from './openai-adapter.ts';
import type { ProviderAdapter } from './provider-adapter.ts';

// Providers as data: an OpenAI-compatible host is a name, a base URL and the endpoints it
// serves. Hosts without a public URL (ollama, vllm, lm-studio) need a custom host.

export interface CatalogEntry {
  readonly name: string;
  /** Public base URL; undefined when the provider is always self-hosted. */
  readonly baseUrl: string | undefined;
  readonly adapter: ProviderAdapter;
}

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

const ENTRIES: readonly CatalogEntry[] = [
  { name: 'openai', baseUrl: 'https://api.openai.com/v1', adapter: openaiFull },
  { name: 'groq', baseUrl: 'https://api.groq.com/openai/v1', adapter: openaiCompatibleAdapter(CHAT_ONLY) },
  { name: 'together-ai', baseUrl: 'https://api.together.xyz/v1', adapter: compatible },
  { name: 'mistral-ai', baseUrl: 'https://api.mistral.ai/v1', adapter: openaiCompatibleAdapter(CHAT_AND_EMBEDDINGS) },
  { name: 'deepseek', baseUrl: 'https://api.deepseek.com/v1', adapter: openaiCompatibleAdapter(CHAT_ONLY) },
  { name: 'fireworks-ai', baseUrl: 'https://api.fireworks.ai/inference/v1', adapter: compatible },
  { name: 'openrouter', baseUrl: 'https://openrouter.ai/api/v1', adapter: openaiCompatibleAdapter(new Set(['chat.completions', 'completions'])) },
  { name: 'perplexity-ai', baseUrl: 'https://api.perplexity.ai', adapter: openaiCompatibleAdapter(CHAT_ONLY) },
  { name: 'x-ai', baseUrl: 'https://api.x.ai/v1', adapter: openaiCompatibleAdapter(CHAT_AND_EMBEDDINGS) },
  { name: 'ollama', baseUrl: undefined, adapter: compatible },
  { name: 'vllm', baseUrl: undefined, adapter: compatible },
  { name: 'lm-studio', baseUrl: undefined, adapter: compatible },
];

/** Provider families that need their own adapter; they are not OpenAI-compatible. */
export const NON_COMPATIBLE_FAMILIES: ReadonlySet<string> = new Set(['azure-openai', 'anthropic', 'vertex-ai', 'bedrock']);

const BY_NAME: ReadonlyMap<string, CatalogEntry> = new Map(ENTRIES.map((entry) => [entry.name, entry]));

export function catalogEntry(name: string): CatalogEntry | undefined {
  return BY_NAME.get(name);
}

/**
 * Any other provider name behind a custom host is treated as OpenAI-compatible: the spec
 * lets users name any provider "when unsure".
 */
export const GENERIC_COMPATIBLE_ADAPTER: ProviderAdapter = openaiFull;

export function catalogNames(): string[] {
  return ENTRIES.map((entry) => entry.name);
}
