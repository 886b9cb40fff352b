import { randomBytes } from 'node:crypto';
import { tokenCount, tokenCountOr } from '../../accounting/token-count.ts';
import { nowSeconds, type ChatUsage } from '../openai/openai-shapes.ts';

// Gemini GenerateContentResponse → chat.completion. Pure apart from generated ids. The
// finish-reason and usage mappings are shared with the stream transform.

type Json = Record<string, unknown>;

const FINISH_REASONS: Readonly<Record<string, string>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

/** Gemini finishReason → OpenAI finish_reason; a turn that called functions ends in `tool_calls`. */
export function openaiFinishReason(reason: unknown, calledTools: boolean): string {
  if (calledTools && (reason === 'STOP' || reason === undefined)) return 'tool_calls';
  return typeof reason === 'string' ? (FINISH_REASONS[reason] ?? 'stop') : 'stop';
}

/** usageMetadata → OpenAI usage (thinking tokens count as completion tokens, as OpenAI's reasoning tokens do). */
export function geminiUsage(metadata: unknown): (ChatUsage & Json) | undefined {
  const usage = asRecord(metadata);
  if (usage === undefined) return undefined;
  // Counts are hostile input (a custom host): tokenCount keeps only sane ones.
  const prompt = tokenCountOr(usage['promptTokenCount'], 0);
  const thoughts = tokenCountOr(usage['thoughtsTokenCount'], 0);
  const completion = tokenCountOr(usage['candidatesTokenCount'], 0) + thoughts;
  const result: ChatUsage & Json = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: tokenCountOr(usage['totalTokenCount'], prompt + completion),
  };
  if (thoughts > 0) result['completion_tokens_details'] = { reasoning_tokens: thoughts };
  const cached = tokenCount(usage['cachedContentTokenCount']);
  if (cached !== undefined) result['prompt_tokens_details'] = { cached_tokens: Math.min(cached, prompt) };
  return result;
}

/** The OpenAI message parts of one candidate's content. */
export interface CandidateParts {
  text: string;
  toolCalls: Array<{ name: string; arguments: string }>;
}

export function candidateParts(candidate: Json): CandidateParts {
  const parts = asRecord(candidate['content'])?.['parts'];
  const result: CandidateParts = { text: '', toolCalls: [] };
  if (!Array.isArray(parts)) return result;
  for (const raw of parts) {
    const part = asRecord(raw);
    if (part === undefined || part['thought'] === true) continue;
    if (typeof part['text'] === 'string') result.text += part['text'];
    const call = asRecord(part['functionCall']);
    if (call !== undefined && typeof call['name'] === 'string') {
      result.toolCalls.push({ name: call['name'], arguments: JSON.stringify(call['args'] ?? {}) });
    }
  }
  return result;
}

/** The chat.completion for a Gemini response to `request`. */
export function chatCompletionFromGemini(response: unknown, request: Json): Json {
  const body = asRecord(response) ?? {};
  const candidates = Array.isArray(body['candidates']) ? (body['candidates'] as unknown[]) : [];
  const choices = candidates.map((raw, position) => {
    const candidate = asRecord(raw) ?? {};
    const { text, toolCalls } = candidateParts(candidate);
    const message: Json = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text, refusal: null };
    if (toolCalls.length > 0) {
      message['tool_calls'] = toolCalls.map((call) => ({ id: toolCallId(), type: 'function', function: call }));
    }
    return {
      index: numberOr(candidate['index'], position),
      message,
      logprobs: null,
      finish_reason: openaiFinishReason(candidate['finishReason'], toolCalls.length > 0),
    };
  });
  // A prompt blocked by safety filters comes back without candidates.
  if (choices.length === 0 && asRecord(body['promptFeedback'])?.['blockReason'] !== undefined) {
    choices.push({ index: 0, message: { role: 'assistant', content: null, refusal: null }, logprobs: null, finish_reason: 'content_filter' });
  }
  return {
    id: completionId(body['responseId']),
    object: 'chat.completion',
    created: createdSeconds(body['createTime']),
    model: typeof request['model'] === 'string' ? request['model'] : String(body['modelVersion'] ?? ''),
    choices,
    usage: geminiUsage(body['usageMetadata']) ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    system_fingerprint: null,
  };
}

export function completionId(responseId: unknown): string {
  return typeof responseId === 'string' && responseId !== '' ? `chatcmpl-${responseId}` : `chatcmpl-${randomBytes(12).toString('hex')}`;
}

export function toolCallId(): string {
  return `call_${randomBytes(12).toString('base64url')}`;
}

export function createdSeconds(createTime: unknown): number {
  const parsed = typeof createTime === 'string' ? Date.parse(createTime) : Number.NaN;
  return Number.isFinite(parsed) ? Math.floor(parsed / 1000) : nowSeconds();
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
