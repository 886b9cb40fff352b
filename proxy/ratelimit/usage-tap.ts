import { tokenCount } from '../accounting/token-count.ts';

// Reads the provider's token usage from an answer on its way to the client, without
// holding it back: a stage of the stream's frame pipeline, each frame forwarded as soon as
// it is whole (plain answers are parsed by the relay, which reads them whole).
// When the gateway asked for usage the client did not (stream_options.include_usage),
// the usage-only chunk is dropped and the `"usage":null` the provider then adds to every
// chunk is cut, so the client sees byte for byte the stream it asked for.

export interface AnswerUsage {
  readonly prompt: number | undefined;
  readonly completion: number | undefined;
  readonly total: number | undefined;
  /** Prompt tokens read from the provider's prompt cache (OpenAI cached_tokens, Anthropic cache_read_input_tokens). */
  readonly cachedPrompt?: number | undefined;
  /** Prompt tokens written to the provider's prompt cache (Anthropic cache_creation_input_tokens). */
  readonly cacheWrite?: number | undefined;
  /** Completion tokens spent on reasoning. */
  readonly reasoning?: number | undefined;
  /** Audio parts (realtime): ⊂ prompt, ⊂ cachedPrompt, ⊂ completion; priced at audio rates (accounting/price-table.ts). */
  readonly audioPrompt?: number | undefined;
  readonly cachedAudioPrompt?: number | undefined;
  readonly audioCompletion?: number | undefined;
}

/**
 * The usage of an OpenAI-shaped answer or stream event (chat, completions, embeddings, responses).
 * Each count passes tokenCount: a value that is not a sane count is absent.
 */
export function usageOf(payload: unknown): AnswerUsage | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const record = payload as Record<string, unknown>;
  const nested = record['response'];
  const usage = (record['usage'] ?? (typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>)['usage'] : undefined)) as
    | Record<string, unknown>
    | null
    | undefined;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const prompt = tokenCount(usage['prompt_tokens']) ?? tokenCount(usage['input_tokens']);
  const completion = tokenCount(usage['completion_tokens']) ?? tokenCount(usage['output_tokens']);
  const total = tokenCount(usage['total_tokens']) ?? (prompt === undefined && completion === undefined ? undefined : (prompt ?? 0) + (completion ?? 0));
  const promptDetails = detailsOf(usage['prompt_tokens_details'] ?? usage['input_tokens_details']);
  const completionDetails = detailsOf(usage['completion_tokens_details'] ?? usage['output_tokens_details']);
  const cachedPrompt = tokenCount(promptDetails?.['cached_tokens']) ?? tokenCount(usage['cache_read_input_tokens']);
  const cacheWrite = tokenCount(usage['cache_creation_input_tokens']);
  const reasoning = tokenCount(completionDetails?.['reasoning_tokens']);
  if (cachedPrompt === undefined && cacheWrite === undefined && reasoning === undefined) return { prompt, completion, total };
  return { prompt, completion, total, cachedPrompt, cacheWrite, reasoning };
}

function detailsOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

/** The model an answer or stream event names, when it names one. */
export function modelOf(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const record = payload as Record<string, unknown>;
  const nested = record['response'];
  const model = record['model'] ?? (typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>)['model'] : undefined);
  return typeof model === 'string' && model.length <= 256 ? model : undefined;
}

/** What the tap tells its owner: the usage, the model it names, and how many content events passed. */
export interface UsageTapSink {
  onUsage(usage: AnswerUsage, model: string | undefined): void;
  /** Counted for the estimate when the client leaves before the provider's usage. */
  streamEvents: number;
  /** The stream's `data: [DONE]` passed: a client may close now, the answer is whole. */
  onDone?(): void;
}

const USAGE_NULL = /,\s*"usage"\s*:\s*null/;

/**
 * What the usage stage reads of a stream frame. The pipeline's SseFrame (providers/sse-parser.ts)
 * is one; the tap names only what it uses, so it depends on no floor above its own.
 */
export interface UsageFrame<Frame> {
  /** False for frames that carry no event (blank lines, comments only). */
  readonly dispatch: boolean;
  readonly data: string;
  readonly raw: string;
  /** The data as JSON (parsed once, shared), or a symbol (sse-parser's NOT_JSON): JSON is never a symbol. */
  readonly json: unknown;
  rewritten(raw: string, data: string, sameJson: boolean): Frame;
}

/**
 * The usage stage of a stream's frame pipeline: reports usage and optionally drops the
 * usage-only chunk. Parses an event (through the frame, shared with the other stages) only
 * when it may carry usage that is not `null`.
 */
export class UsageStage {
  readonly #strip: boolean;
  readonly #sink: UsageTapSink;

  constructor(strip: boolean, sink: UsageTapSink) {
    this.#strip = strip;
    this.#sink = sink;
  }

  /** A stage of streams/sse-frame-pipeline.ts (SseFrameStage): the frame on, rewritten, or dropped. */
  frame<Frame extends UsageFrame<Frame>>(frame: Frame): Frame | undefined {
    const data = frame.data;
    if (!frame.dispatch || data === '') return frame;
    if (data === '[DONE]') {
      this.#sink.onDone?.();
      return frame;
    }
    if (!data.includes('usage')) {
      this.#sink.streamEvents++;
      return frame;
    }
    // The provider marks every chunk but the last `"usage":null` once asked: no parse needed,
    // and cut when it was the gateway that asked (the JSON means the same without it).
    const raw = frame.raw;
    const compact = raw.lastIndexOf(COMPACT_USAGE_NULL);
    if (compact !== -1) {
      this.#sink.streamEvents++;
      if (!this.#strip) return frame;
      const at = data.lastIndexOf(COMPACT_USAGE_NULL);
      return frame.rewritten(cut(raw, compact), at === -1 ? data : cut(data, at), true);
    }
    if (data.includes('null') && USAGE_NULL.test(data)) {
      this.#sink.streamEvents++;
      return this.#strip ? frame.rewritten(raw.replace(USAGE_NULL, ''), data.replace(USAGE_NULL, ''), true) : frame;
    }
    const payload = frame.json;
    if (typeof payload === 'symbol') return frame; // NOT_JSON
    const usage = usageOf(payload);
    if (usage === undefined) {
      this.#sink.streamEvents++;
      return frame;
    }
    this.#sink.onUsage(usage, modelOf(payload));
    const choices = (payload as { choices?: unknown }).choices;
    return this.#strip && Array.isArray(choices) && choices.length === 0 ? undefined : frame;
  }
}

const COMPACT_USAGE_NULL = ',"usage":null';

function cut(text: string, at: number): string {
  return text.slice(0, at) + text.slice(at + COMPACT_USAGE_NULL.length);
}
