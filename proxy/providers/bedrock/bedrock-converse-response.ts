import { randomBytes } from 'node:crypto';
import { tokenCountOr } from '../../accounting/token-count.ts';
import type { OpenAIErrorBody } from '../../errors.ts';
import { nowSeconds, type ChatUsage } from '../openai/openai-shapes.ts';
import { normaliseProviderError } from '../provider-errors.ts';

// Bedrock Converse response → chat.completion; stopReason and usage mappings shared with
// the ConverseStream transform; Bedrock's error bodies (`{"message":"…"}`, sometimes
// `{"Message":"…"}`) → the OpenAI error shape. Pure apart from the generated id.

type Json = Record<string, unknown>;

const FINISH_REASONS: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

export function finishReasonOfStop(stopReason: unknown): string {
  return typeof stopReason === 'string' ? (FINISH_REASONS[stopReason] ?? 'stop') : 'stop';
}

/** Converse `usage` → OpenAI usage (cache reads and writes count as prompt tokens, as OpenAI counts them). */
export function converseUsage(value: unknown): (ChatUsage & Json) | undefined {
  const usage = asRecord(value);
  if (usage === undefined) return undefined;
  // Counts are hostile input: tokenCount keeps only sane ones.
  const cacheRead = tokenCountOr(usage['cacheReadInputTokens'], 0);
  const prompt = tokenCountOr(usage['inputTokens'], 0) + cacheRead + tokenCountOr(usage['cacheWriteInputTokens'], 0);
  const completion = tokenCountOr(usage['outputTokens'], 0);
  const result: ChatUsage & Json = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cacheRead > 0) result['prompt_tokens_details'] = { cached_tokens: cacheRead };
  return result;
}

export function chatCompletionFromConverse(response: unknown, request: Json): Json {
  const body = asRecord(response) ?? {};
  const content = asRecord(asRecord(body['output'])?.['message'])?.['content'];
  let text = '';
  let sawText = false;
  const toolCalls: Json[] = [];
  for (const raw of Array.isArray(content) ? content : []) {
    const block = asRecord(raw);
    if (block === undefined) continue;
    if (typeof block['text'] === 'string') {
      text += block['text'];
      sawText = true;
    }
    const toolUse = asRecord(block['toolUse']);
    if (toolUse !== undefined) {
      toolCalls.push({
        id: toolUse['toolUseId'],
        type: 'function',
        function: { name: toolUse['name'], arguments: JSON.stringify(toolUse['input'] ?? {}) },
      });
    }
    // reasoningContent blocks have no chat-completions field; they are left out.
  }
  const message: Json = { role: 'assistant', content: sawText || toolCalls.length === 0 ? text : null, refusal: null };
  if (toolCalls.length > 0) message['tool_calls'] = toolCalls;
  return {
    id: bedrockCompletionId(),
    object: 'chat.completion',
    created: nowSeconds(),
    model: typeof request['model'] === 'string' ? request['model'] : '',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOfStop(body['stopReason']) }],
    usage: converseUsage(body['usage']) ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

export function bedrockCompletionId(): string {
  return `chatcmpl-${randomBytes(12).toString('hex')}`;
}

export function normaliseBedrockError(status: number, bodyText: string, provider: string): OpenAIErrorBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  const body = asRecord(parsed);
  const message = body?.['message'] ?? body?.['Message'];
  if (typeof message !== 'string') return normaliseProviderError(status, bodyText, provider);
  const normalised = normaliseProviderError(status, JSON.stringify({ message }), provider);
  const type = body?.['__type'];
  if (typeof type === 'string') normalised.error.code = type.split('#').at(-1) ?? type;
  return normalised;
}

/** An exception event of a ConverseStream (`:exception-type` + `{message}`) as an OpenAI error body. */
export function streamExceptionBody(exceptionType: string, payload: unknown, provider: string): OpenAIErrorBody {
  const message = asRecord(payload)?.['message'];
  const status = EXCEPTION_STATUS[exceptionType] ?? 500;
  const body = normaliseProviderError(status, '', provider);
  body.error.message = typeof message === 'string' ? message : `bedrock stream failed: ${exceptionType}`;
  body.error.code = exceptionType;
  return body;
}

const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  validationException: 400,
  throttlingException: 429,
  serviceUnavailableException: 503,
  modelStreamErrorException: 424,
  internalServerException: 500,
};

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
