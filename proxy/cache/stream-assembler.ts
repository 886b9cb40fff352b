// Rebuilds the non-streaming answer from an OpenAI-style SSE stream as it passes to the
// client, so a streamed answer can be cached and later served to either kind of request.
//
// Feed it the bytes in any framing (frames split across chunks are fine), or — as a stage
// of the relay's frame pipeline — the frames already split, whose JSON it shares with the
// other stages; result() gives
// the equivalent chat.completion / text_completion object only for a complete, successful
// stream: it ended with `data: [DONE]`, carried no error event or error payload, every
// frame was JSON of the expected shape, and every choice has a finish_reason. Anything
// else — a cut connection, a mid-stream error, a stream over maxBytes — gives undefined,
// and the caller stores nothing. Memory is bounded by maxBytes: past it the assembler stops
// collecting.
//
// Merging follows OpenAI's delta rules: strings (content, refusal, tool-call arguments)
// are concatenated; tool calls are gathered by their index (id, type and name arrive once);
// annotations and logprobs arrays are concatenated; the last non-null usage wins. Unknown
// delta fields are concatenated when strings, else the last value wins. stream-replay.ts is
// the inverse.

import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { eventsOf, parseEventData as parseJson, SseFrameSplitter, type SseFrame } from '../providers/sse-parser.ts';
import type { SseFrameStage } from '../streams/sse-frame-pipeline.ts';
import { DEFAULT_MAX_ENTRY_BYTES } from './response-cache-store.ts';

type Json = Record<string, unknown>;

interface ToolCallState {
  id: unknown;
  type: unknown;
  name: string | undefined;
  args: string;
}

interface ChoiceState {
  readonly index: number;
  role: unknown;
  content: string | null;
  refusal: string | null;
  readonly toolCalls: Map<number, ToolCallState>;
  functionCall: { name: unknown; args: string } | undefined;
  readonly annotations: unknown[];
  readonly extra: Json;
  logprobs: Json | null;
  text: string;
  finishReason: unknown;
}

/** Envelope fields of a chunk that are not copied onto the assembled answer. */
const CHUNK_ONLY_FIELDS: ReadonlySet<string> = new Set(['object', 'choices', 'usage', 'obfuscation']);
const KNOWN_DELTA_FIELDS: ReadonlySet<string> = new Set(['role', 'content', 'refusal', 'tool_calls', 'function_call', 'annotations']);

/**
 * Assembles a streamed chat or text completion into its non-streaming answer.
 * @example
 * const assembler = new StreamAssembler('chat.completions');
 * upstream.on('data', (chunk) => assembler.push(chunk));
 * upstream.on('end', () => { const answer = assembler.result(); if (answer) store(JSON.stringify(answer)); });
 */
export class StreamAssembler implements SseFrameStage {
  readonly #endpoint: InferenceEndpoint;
  readonly #maxBytes: number;
  readonly #splitter = new SseFrameSplitter();
  readonly #envelope: Json = {};
  readonly #choices = new Map<number, ChoiceState>();
  #usage: unknown;
  #bytes = 0;
  #done = false;
  #failed = false;

  /** `maxBytes`: the most stream bytes collected (default 2 MiB, the stores' entry limit). */
  constructor(endpoint: InferenceEndpoint, options: { maxBytes?: number } = {}) {
    this.#endpoint = endpoint;
    this.#maxBytes = options.maxBytes ?? DEFAULT_MAX_ENTRY_BYTES;
    // Only chat and text completions are assembled (embeddings do not stream; responses are not cached).
    if (endpoint !== 'chat.completions' && endpoint !== 'completions') this.#failed = true;
  }

  /** Takes the next bytes of the stream as they pass to the client. */
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
      this.#event(frame.event, frame.data, parseJson);
      if (this.#failed || this.#done) return;
    }
  }

  /** Takes the next frame of the stream (the pipeline's split; its JSON parsed at most once) and passes it on. */
  frame(frame: SseFrame): SseFrame {
    if (this.#failed || this.#done) return frame;
    this.#bytes += Buffer.byteLength(frame.raw);
    if (this.#bytes > this.#maxBytes) this.#failed = true;
    else if (frame.dispatch) this.#event(frame.event, frame.data, () => frame.json);
    return frame;
  }

  /** The equivalent non-streaming answer, or undefined unless the stream was complete and successful. */
  result(): Json | undefined {
    if (!this.#done || this.#failed || this.#choices.size === 0) return undefined;
    const states = [...this.#choices.values()].sort((a, b) => a.index - b.index);
    if (states.some((state) => state.finishReason === null || state.finishReason === undefined)) return undefined;
    const chat = this.#endpoint === 'chat.completions';
    const answer: Json = {
      ...this.#envelope,
      object: chat ? 'chat.completion' : 'text_completion',
      choices: states.map((state) => (chat ? chatChoice(state) : textChoice(state))),
    };
    if (isRecord(this.#usage)) answer['usage'] = this.#usage;
    return answer;
  }

  #event(name: string | undefined, text: string, json: (data: string) => unknown): void {
    if (name === 'error') {
      this.#failed = true;
      return;
    }
    const data = text.trim();
    if (data === '') return;
    if (data === '[DONE]') {
      this.#done = true;
      return;
    }
    const payload = json(data);
    if (!isRecord(payload) || payload['error'] !== undefined || !Array.isArray(payload['choices'])) {
      this.#failed = true;
      return;
    }
    for (const [key, value] of Object.entries(payload)) {
      if (!CHUNK_ONLY_FIELDS.has(key) && (this.#envelope[key] === undefined || this.#envelope[key] === null)) this.#envelope[key] = value;
    }
    if (isRecord(payload['usage'])) this.#usage = payload['usage'];
    for (const choice of payload['choices']) {
      if (!isRecord(choice) || typeof choice['index'] !== 'number') {
        this.#failed = true;
        return;
      }
      this.#choice(choice, choice['index']);
    }
  }

  #choice(choice: Json, index: number): void {
    let state = this.#choices.get(index);
    if (state === undefined) {
      state = {
        index,
        role: undefined,
        content: null,
        refusal: null,
        toolCalls: new Map(),
        functionCall: undefined,
        annotations: [],
        extra: {},
        logprobs: null,
        text: '',
        finishReason: null,
      };
      this.#choices.set(index, state);
    }
    if (typeof choice['text'] === 'string') state.text += choice['text'];
    if (isRecord(choice['logprobs'])) state.logprobs = mergeLogprobs(state.logprobs, choice['logprobs']);
    if (choice['finish_reason'] !== null && choice['finish_reason'] !== undefined) state.finishReason = choice['finish_reason'];
    const delta = choice['delta'];
    if (isRecord(delta)) mergeDelta(state, delta);
  }
}

function mergeDelta(state: ChoiceState, delta: Json): void {
  if (delta['role'] !== undefined && delta['role'] !== null) state.role = delta['role'];
  if (typeof delta['content'] === 'string') state.content = (state.content ?? '') + delta['content'];
  if (typeof delta['refusal'] === 'string') state.refusal = (state.refusal ?? '') + delta['refusal'];
  if (Array.isArray(delta['annotations'])) state.annotations.push(...(delta['annotations'] as unknown[]));
  if (Array.isArray(delta['tool_calls'])) {
    for (const [position, call] of delta['tool_calls'].entries()) {
      if (!isRecord(call)) continue;
      const index = typeof call['index'] === 'number' ? call['index'] : position;
      let tool = state.toolCalls.get(index);
      if (tool === undefined) {
        tool = { id: undefined, type: undefined, name: undefined, args: '' };
        state.toolCalls.set(index, tool);
      }
      if (call['id'] !== undefined && call['id'] !== null) tool.id = call['id'];
      if (call['type'] !== undefined && call['type'] !== null) tool.type = call['type'];
      const fn = call['function'];
      if (isRecord(fn)) {
        if (typeof fn['name'] === 'string' && fn['name'] !== '') tool.name = (tool.name ?? '') + fn['name'];
        if (typeof fn['arguments'] === 'string') tool.args += fn['arguments'];
      }
    }
  }
  const fn = delta['function_call'];
  if (isRecord(fn)) {
    state.functionCall ??= { name: undefined, args: '' };
    if (typeof fn['name'] === 'string') state.functionCall.name = fn['name'];
    if (typeof fn['arguments'] === 'string') state.functionCall.args += fn['arguments'];
  }
  for (const [key, value] of Object.entries(delta)) {
    if (KNOWN_DELTA_FIELDS.has(key) || value === null || value === undefined) continue;
    const previous = state.extra[key];
    state.extra[key] = typeof value === 'string' && typeof previous === 'string' ? previous + value : value;
  }
}

/** Concatenates the arrays of two logprobs objects (chat: content/refusal; completions: tokens…). */
function mergeLogprobs(into: Json | null, next: Json): Json {
  if (into === null) return { ...next };
  for (const [key, value] of Object.entries(next)) {
    const previous = into[key];
    into[key] = Array.isArray(previous) && Array.isArray(value) ? [...(previous as unknown[]), ...(value as unknown[])] : value;
  }
  return into;
}

function chatChoice(state: ChoiceState): Json {
  const message: Json = {
    role: state.role ?? 'assistant',
    content: state.content,
    refusal: state.refusal,
    annotations: state.annotations,
    ...state.extra,
  };
  if (state.toolCalls.size > 0) {
    message['tool_calls'] = [...state.toolCalls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, tool]) => ({ id: tool.id, type: tool.type ?? 'function', function: { name: tool.name, arguments: tool.args } }));
  }
  if (state.functionCall !== undefined) message['function_call'] = { name: state.functionCall.name, arguments: state.functionCall.args };
  return { index: state.index, message, logprobs: state.logprobs, finish_reason: state.finishReason };
}

function textChoice(state: ChoiceState): Json {
  return { text: state.text, index: state.index, logprobs: state.logprobs, finish_reason: state.finishReason };
}


function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
