// Builders for the OpenAI response shapes that translating adapters emit, so every family
// produces the same objects (checked against OpenAI's schema in the tests).

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatChunkDelta {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: ChatToolCallDelta[];
}

/** A `chat.completion.chunk` with one choice (or none, for the usage-only chunk). */
export function chatCompletionChunk(
  id: string,
  model: string,
  created: number,
  delta: ChatChunkDelta | undefined,
  finishReason: string | null = null,
  usage?: ChatUsage,
): Record<string, unknown> {
  const chunk: Record<string, unknown> = {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: delta === undefined ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  if (usage !== undefined) chunk['usage'] = usage;
  return chunk;
}

export function usageOf(promptTokens: number, completionTokens: number): ChatUsage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
