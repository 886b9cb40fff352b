import { GatewayError, type OpenAIErrorBody } from '../../errors.ts';
import { tokenCountOr } from '../../accounting/token-count.ts';
import { ANTHROPIC_ERROR_TYPES, isRecord } from './anthropic-wire.ts';
import { nowSeconds, usageOf, type ChatUsage } from '../openai/openai-shapes.ts';
import { normaliseProviderError } from '../provider-errors.ts';

// Anthropic Message → OpenAI chat.completion, plus the finish-reason, usage and error
// mappings the stream transform shares. Pure.

const FINISH_REASONS: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** Anthropic `stop_reason` → OpenAI `finish_reason` (null while the message is unfinished). */
export function finishReasonOf(stopReason: unknown): string | null {
  if (typeof stopReason !== 'string') return null;
  return FINISH_REASONS[stopReason] ?? 'stop';
}

export interface AnthropicUsageTotals {
  inputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  outputTokens: number;
}

export function emptyUsageTotals(): AnthropicUsageTotals {
  return { inputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, outputTokens: 0 };
}

/**
 * Folds an Anthropic `usage` object into running totals (later values win; counts are
 * cumulative). A value that is not a sane count (tokenCount) leaves the total as it was.
 */
export function addAnthropicUsage(totals: AnthropicUsageTotals, usage: unknown): void {
  if (!isRecord(usage)) return;
  totals.inputTokens = tokenCountOr(usage['input_tokens'], totals.inputTokens);
  totals.cacheCreationTokens = tokenCountOr(usage['cache_creation_input_tokens'], totals.cacheCreationTokens);
  totals.cacheReadTokens = tokenCountOr(usage['cache_read_input_tokens'], totals.cacheReadTokens);
  totals.outputTokens = tokenCountOr(usage['output_tokens'], totals.outputTokens);
}

export type OpenAIUsage = ChatUsage & { prompt_tokens_details?: { cached_tokens: number } };

/**
 * OpenAI counts cached prompt tokens inside prompt_tokens; Anthropic reports cache reads
 * and writes apart from input_tokens, so they are added back.
 */
export function openAIUsageOf(totals: AnthropicUsageTotals): OpenAIUsage {
  const prompt = totals.inputTokens + totals.cacheCreationTokens + totals.cacheReadTokens;
  const usage: OpenAIUsage = usageOf(prompt, totals.outputTokens);
  if (totals.cacheReadTokens > 0) usage.prompt_tokens_details = { cached_tokens: totals.cacheReadTokens };
  return usage;
}

/** A non-streamed Anthropic Message as an OpenAI `chat.completion`. */
export function fromAnthropicMessage(message: unknown, request: Record<string, unknown>): Record<string, unknown> {
  if (!isRecord(message) || !Array.isArray(message['content'])) {
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', 'anthropic answered without a message content array.');
  }
  let text = '';
  let sawText = false;
  const toolCalls: Array<Record<string, unknown>> = [];
  for (const block of message['content'] as unknown[]) {
    if (!isRecord(block)) continue;
    if (block['type'] === 'text' && typeof block['text'] === 'string') {
      text += block['text'];
      sawText = true;
    } else if (block['type'] === 'tool_use') {
      toolCalls.push({
        id: block['id'],
        type: 'function',
        function: { name: block['name'], arguments: JSON.stringify(block['input'] ?? {}) },
      });
    }
    // thinking / redacted_thinking blocks have no chat-completions field; they are left out.
  }
  const reply: Record<string, unknown> = {
    role: 'assistant',
    content: sawText || toolCalls.length === 0 ? text : null,
    refusal: null,
  };
  if (toolCalls.length > 0) reply['tool_calls'] = toolCalls;
  const totals = emptyUsageTotals();
  addAnthropicUsage(totals, message['usage']);
  return {
    id: typeof message['id'] === 'string' ? message['id'] : 'msg_unknown',
    object: 'chat.completion',
    created: nowSeconds(),
    model: typeof message['model'] === 'string' ? message['model'] : String(request['model']),
    choices: [{ index: 0, message: reply, logprobs: null, finish_reason: finishReasonOf(message['stop_reason']) ?? 'stop' }],
    usage: openAIUsageOf(totals),
  };
}

/** `{type:'error', error:{type, message}}` → the OpenAI error shape; the Anthropic type becomes `code`. */
export function anthropicErrorBody(error: unknown, provider: string): OpenAIErrorBody | undefined {
  if (!isRecord(error) || typeof error['message'] !== 'string') return undefined;
  const type = typeof error['type'] === 'string' ? error['type'] : 'api_error';
  return {
    error: { message: error['message'], type: ANTHROPIC_ERROR_TYPES[type] ?? 'api_error', param: null, code: type, provider },
  };
}

export function normaliseAnthropicError(status: number, bodyText: string, provider: string): OpenAIErrorBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  const body = isRecord(parsed) && parsed['type'] === 'error' ? anthropicErrorBody(parsed['error'], provider) : undefined;
  return body ?? normaliseProviderError(status, bodyText, provider);
}
