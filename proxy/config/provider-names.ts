// The provider names a state may use, on the state floor: loading checks each saved
// provider's and each target's name (state-validation.ts) without importing the adapters.
// providers/provider-catalog.ts serves exactly these; test/proxy/config/provider-names.test.ts
// holds the two lists equal.

/** Every provider name the catalog serves. */
export const PROVIDER_NAMES = [
  'openai',
  'groq',
  'together-ai',
  'mistral-ai',
  'deepseek',
  'fireworks-ai',
  'openrouter',
  'perplexity-ai',
  'x-ai',
  'ollama',
  'vllm',
  'lm-studio',
  'azure-openai',
  'anthropic',
  'vertex-ai',
  'bedrock',
] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Names with no public URL and nothing to build one from: always behind a custom host. */
export const SELF_HOSTED_PROVIDERS: ReadonlySet<ProviderName> = new Set<ProviderName>(['ollama', 'vllm', 'lm-studio']);

const KNOWN: ReadonlySet<string> = new Set(PROVIDER_NAMES);

export function isProviderName(name: string): name is ProviderName {
  return KNOWN.has(name);
}
