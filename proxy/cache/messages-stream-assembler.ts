// Rebuilds the Anthropic Message from a /v1/messages stream as it passes to the client, so a
// streamed answer can be cached and later served to a plain or a streamed request — the
// Messages counterpart of stream-assembler.ts; messages-stream-replay.ts is the inverse.
//
// result() gives the Message only for a complete, successful stream: message_start first,
// message_stop last, no `error` event, a stop_reason, every block's deltas of a kind it
// knows (text, thinking, signature, tool input JSON that parses, citations). Anything else
// — a cut connection, a mid-stream error, an unknown delta type (storing it would lose
// it), a stream over maxBytes — gives undefined, and the caller stores nothing. Events of
// unknown types (and ping) are skipped, as Anthropic's SDKs skip them.

import { eventsOf, parseEventData as parseJson, SseFrameSplitter, type SseFrame } from '../providers/sse-parser.ts';
import type { SseFrameStage } from '../streams/sse-frame-pipeline.ts';
import { DEFAULT_MAX_ENTRY_BYTES } from './response-cache-store.ts';

type Json = Record<string, unknown>;

interface BlockState {
  readonly block: Json;
  /** input_json_delta fragments, parsed into `input` when the block stops. */
  json: string;
  stopped: boolean;
}

export class MessagesStreamAssembler implements SseFrameStage {
  readonly #maxBytes: number;
  readonly #splitter = new SseFrameSplitter();
  readonly #blocks = new Map<number, BlockState>();
  #message: Json | undefined;
  #usage: Json = {};
  #bytes = 0;
  #done = false;
  #failed = false;

  /** `maxBytes`: the most stream bytes collected (default 2 MiB, the stores' entry limit). */
  constructor(options: { maxBytes?: number } = {}) {
    this.#maxBytes = options.maxBytes ?? DEFAULT_MAX_ENTRY_BYTES;
  }

  /** Takes the next bytes of the stream, in any framing. */
  push(chunk: Buffer | Uint8Array | string): void {
    if (this.#failed || this.#done) return;
    this.#bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    if (this.#bytes > this.#maxBytes) {
      this.#failed = true;
      return;
    }
    const events = eventsOf(this.#splitter, chunk);
    if (events === undefined) {
      this.#failed = true; // an event over the cap: nothing to cache
      return;
    }
    for (const frame of events) {
      this.#event(frame.event, parseJson(frame.data));
      if (this.#failed || this.#done) return;
    }
  }

  /** Takes the next frame (the pipeline's split; its JSON parsed at most once) and passes it on. */
  frame(frame: SseFrame): SseFrame {
    if (this.#failed || this.#done) return frame;
    this.#bytes += Buffer.byteLength(frame.raw);
    if (this.#bytes > this.#maxBytes) this.#failed = true;
    else if (frame.dispatch && frame.data.trim() !== '') this.#event(frame.event, frame.json);
    return frame;
  }

  /** The streamed Message, or undefined unless the stream was complete and successful. */
  result(): Json | undefined {
    const message = this.#message;
    if (!this.#done || this.#failed || message === undefined) return undefined;
    if (typeof message['stop_reason'] !== 'string') return undefined;
    const states = [...this.#blocks.entries()].sort(([a], [b]) => a - b);
    if (states.some(([, state]) => !state.stopped)) return undefined;
    return { ...message, content: states.map(([, state]) => state.block), usage: { ...this.#usage } };
  }

  #event(name: string | undefined, payload: unknown): void {
    if (name === 'error' || !isRecord(payload) || payload['type'] === 'error') {
      // An error event, or data that is not an event object: nothing trustworthy to store.
      this.#failed = true;
      return;
    }
    switch (payload['type']) {
      case 'message_start': {
        const message = payload['message'];
        if (this.#message !== undefined || !isRecord(message)) return this.#fail();
        this.#message = { ...message };
        if (isRecord(message['usage'])) this.#usage = { ...message['usage'] };
        return;
      }
      case 'content_block_start': {
        const index = payload['index'];
        const block = payload['content_block'];
        if (this.#message === undefined || typeof index !== 'number' || !isRecord(block) || this.#blocks.has(index)) return this.#fail();
        this.#blocks.set(index, { block: { ...block }, json: '', stopped: false });
        return;
      }
      case 'content_block_delta':
        return this.#delta(payload);
      case 'content_block_stop':
        return this.#stop(payload['index']);
      case 'message_delta': {
        const delta = payload['delta'];
        if (this.#message === undefined) return this.#fail();
        if (isRecord(delta)) Object.assign(this.#message, delta);
        // Anthropic's message_delta usage is cumulative: its counts replace message_start's.
        if (isRecord(payload['usage'])) Object.assign(this.#usage, payload['usage']);
        return;
      }
      case 'message_stop':
        if (this.#message === undefined) return this.#fail();
        this.#done = true;
        return;
      default:
        return;
    }
  }

  #delta(payload: Json): void {
    const index = payload['index'];
    const state = typeof index === 'number' ? this.#blocks.get(index) : undefined;
    const delta = payload['delta'];
    if (state === undefined || state.stopped || !isRecord(delta)) return this.#fail();
    const { block } = state;
    const append = (field: string, text: unknown): void => {
      if (typeof text !== 'string') return this.#fail();
      block[field] = (typeof block[field] === 'string' ? block[field] : '') + text;
    };
    switch (delta['type']) {
      case 'text_delta':
        return append('text', delta['text']);
      case 'thinking_delta':
        return append('thinking', delta['thinking']);
      case 'signature_delta':
        if (typeof delta['signature'] !== 'string') return this.#fail();
        block['signature'] = delta['signature'];
        return;
      case 'input_json_delta':
        if (typeof delta['partial_json'] !== 'string') return this.#fail();
        state.json += delta['partial_json'];
        return;
      case 'citations_delta':
        block['citations'] = [...(Array.isArray(block['citations']) ? block['citations'] : []), delta['citation']];
        return;
      default:
        return this.#fail();
    }
  }

  #stop(index: unknown): void {
    const state = typeof index === 'number' ? this.#blocks.get(index) : undefined;
    if (state === undefined || state.stopped) return this.#fail();
    state.stopped = true;
    if (state.json === '') return;
    const input = parseJson(state.json);
    if (!isRecord(input)) return this.#fail();
    state.block['input'] = input;
  }

  #fail(): void {
    this.#failed = true;
  }
}


function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
