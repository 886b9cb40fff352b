import { addAnthropicUsage, emptyUsageTotals, type AnthropicUsageTotals } from '../providers/anthropic/anthropic-response.ts';
import { isRecord } from '../providers/anthropic/anthropic-wire.ts';
import type { SseEventTranslation, SseFrame } from '../providers/sse-parser.ts';

// Reads Anthropic Messages frames as they pass (their JSON parsed once, shared with the other
// stages): the usage (input and cache tokens from message_start, output from message_delta)
// for accounting, and — for output guardrails — the assembled Message. Never changes a byte.

type Json = Record<string, unknown>;

/** Most bytes of text assembled for output checks; past it only usage is read. */
const MAX_ASSEMBLED_BYTES = 16 * 1024 * 1024;

export class MessagesStreamReader {
  readonly #collect: boolean;
  readonly usage: AnthropicUsageTotals = emptyUsageTotals();
  #sawUsage = false;
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

  /** Reads one frame of the stream. */
  frame(frame: SseFrame): void {
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

/** A pipeline step that shows every frame to a reader and passes it on unchanged. */
export function messagesStreamTap(reader: MessagesStreamReader): SseEventTranslation {
  return {
    event(frame, out) {
      try {
        reader.frame(frame);
      } catch {
        // Reading is best effort; the frame passes regardless.
      }
      out.push(frame);
    },
  };
}
