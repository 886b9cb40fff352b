import { addAnthropicUsage, emptyUsageTotals, type AnthropicUsageTotals } from '../../providers/anthropic/anthropic-response.ts';
import { isRecord } from '../../providers/anthropic/anthropic-wire.ts';
import type { SseFrame } from '../../providers/sse-parser.ts';
import type { AnswerUsage, UsageTapSink } from '../../ratelimit/usage-tap.ts';
import type { SseFrameStage } from '../../streams/sse-frame-pipeline.ts';

// Reads Anthropic Messages frames as they pass (their JSON parsed once, shared with the other
// stages): the usage (input and cache tokens from message_start, output from message_delta)
// for accounting, and — for output guardrails — the assembled Message. Never changes a byte.
// It is the /v1/messages stream's usage stage: the usage is told once, whole.

type Json = Record<string, unknown>;

/** Most bytes of text assembled for output checks; past it only usage is read. */
const MAX_ASSEMBLED_BYTES = 16 * 1024 * 1024;

/** The events that carry usage or end the answer; the others are read only to assemble it. */
const READ_FOR_USAGE: ReadonlySet<string> = new Set(['message_start', 'message_delta', 'error']);

export class MessagesStreamReader {
  readonly #collect: boolean;
  readonly usage: AnthropicUsageTotals = emptyUsageTotals();
  #sawUsage = false;
  #model: string | undefined;
  #message: Json | undefined;
  readonly #blocks = new Map<number, Json>();
  #collected = 0;
  #failed = false;

  constructor(options: { collectContent: boolean }) {
    this.#collect = options.collectContent;
  }

  /** True once the stream reported any usage. */
  get sawUsage(): boolean {
    return this.#sawUsage;
  }

  /** The model message_start names. */
  get model(): string | undefined {
    return this.#model;
  }

  /** Reads one frame of the stream (a content event is not parsed unless content is collected). */
  frame(frame: SseFrame): void {
    if (!this.#collect && frame.event !== undefined && !READ_FOR_USAGE.has(frame.event)) return;
    this.#event(frame.json);
  }

  /** The streamed Message (text, thinking and tool_use blocks), or undefined for a broken stream. */
  result(): Json | undefined {
    if (this.#failed || this.#message === undefined) return undefined;
    const content = [...this.#blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
    return { ...this.#message, content, usage: { ...this.#usageBody() } };
  }

  #usageBody(): Json {
    return {
      input_tokens: this.usage.inputTokens,
      output_tokens: this.usage.outputTokens,
      cache_creation_input_tokens: this.usage.cacheCreationTokens,
      cache_read_input_tokens: this.usage.cacheReadTokens,
    };
  }

  #event(event: unknown): void {
    if (this.#failed || !isRecord(event)) return;
    switch (event['type']) {
      case 'message_start': {
        const message = isRecord(event['message']) ? event['message'] : {};
        this.#note(message['usage']);
        const model = message['model'];
        if (typeof model === 'string' && model.length <= 256) this.#model = model;
        if (this.#collect) this.#message = { ...message };
        break;
      }
      case 'message_delta': {
        this.#note(event['usage']);
        const delta = event['delta'];
        if (this.#message !== undefined && isRecord(delta)) Object.assign(this.#message, delta);
        break;
      }
      case 'content_block_start':
        if (this.#collect && typeof event['index'] === 'number' && isRecord(event['content_block'])) {
          this.#blocks.set(event['index'], { ...event['content_block'] });
        }
        break;
      case 'content_block_delta':
        if (this.#collect) this.#delta(event);
        break;
      case 'error':
        this.#failed = true;
        break;
      default:
        break;
    }
  }

  /** Takes the usage of a plain (non-streamed) Message. */
  noteUsage(usage: unknown): void {
    this.#note(usage);
  }

  #note(usage: unknown): void {
    if (!isRecord(usage)) return;
    this.#sawUsage = true;
    addAnthropicUsage(this.usage, usage);
  }

  #delta(event: Json): void {
    const block = typeof event['index'] === 'number' ? this.#blocks.get(event['index']) : undefined;
    const delta = event['delta'];
    if (block === undefined || !isRecord(delta)) return;
    const append = (field: string, text: unknown): void => {
      if (typeof text !== 'string') return;
      this.#collected += text.length;
      if (this.#collected > MAX_ASSEMBLED_BYTES) {
        this.#failed = true;
        return;
      }
      block[field] = String(block[field] ?? '') + text;
    };
    if (delta['type'] === 'text_delta') append('text', delta['text']);
    else if (delta['type'] === 'thinking_delta') append('thinking', delta['thinking']);
    else if (delta['type'] === 'input_json_delta') append('partial_json', delta['partial_json']);
  }
}

/**
 * Anthropic reports input_tokens apart from cache writes and reads; the request's prompt
 * counts all three (as OpenAI's prompt_tokens counts cached ones), with the parts named.
 */
export function answerUsageOfTotals(totals: AnthropicUsageTotals): AnswerUsage {
  const { inputTokens, cacheCreationTokens, cacheReadTokens, outputTokens } = totals;
  const prompt = inputTokens + cacheCreationTokens + cacheReadTokens;
  return { prompt, completion: outputTokens, total: prompt + outputTokens, cachedPrompt: cacheReadTokens, cacheWrite: cacheCreationTokens };
}

/** The usage of an Anthropic Message (or of the `{ usage, model }` a large answer's scanner read). */
export function messageUsageOf(answer: unknown): AnswerUsage | undefined {
  if (!isRecord(answer) || !isRecord(answer['usage'])) return undefined;
  const totals = emptyUsageTotals();
  addAnthropicUsage(totals, answer['usage']);
  return answerUsageOfTotals(totals);
}

/**
 * The /v1/messages stream's usage stage: every frame read by `reader`, the usage told to
 * the sink once — at message_stop (the end of a whole answer, the client may close), or
 * when the stream ends without one. Content deltas are counted for the estimate of a
 * stream the client leaves early.
 */
export class MessagesUsageStage implements SseFrameStage {
  readonly #reader: MessagesStreamReader;
  readonly #sink: UsageTapSink;
  #told = false;

  constructor(reader: MessagesStreamReader, sink: UsageTapSink) {
    this.#reader = reader;
    this.#sink = sink;
  }

  frame(frame: SseFrame): SseFrame {
    if (!frame.dispatch) return frame;
    if (frame.event === 'content_block_delta') this.#sink.streamEvents++;
    try {
      this.#reader.frame(frame);
    } catch {
      // Reading is best effort; the frame passes regardless.
    }
    if (frame.event === 'message_stop') {
      this.#tell();
      this.#sink.onDone?.();
    }
    return frame;
  }

  end(): void {
    this.#tell();
  }

  #tell(): void {
    if (this.#told || !this.#reader.sawUsage) return;
    this.#told = true;
    this.#sink.onUsage(answerUsageOfTotals(this.#reader.usage), this.#reader.model);
  }
}
