/**
 * The inference endpoints, by OpenAI's operation names: what bodies, adapters, cache keys
 * and guardrails are told. `messages` and `messages.count_tokens` carry Anthropic-shaped
 * bodies (POST /v1/messages…).
 */
export type InferenceEndpoint = 'chat.completions' | 'completions' | 'embeddings' | 'responses' | 'messages' | 'messages.count_tokens';
