import { chatCompletionChunk, nowSeconds, type ChatChunkDelta, type ChatUsage } from '../openai/openai-shapes.ts';
import { DONE_FRAME, NOT_JSON, SseEventTranslator, SseFrame, type SseFrameSource } from '../sse-parser.ts';
import { googleError, vertexErrorBody } from './vertex-errors.ts';
import { candidateParts, completionId, geminiUsage, openaiFinishReason, toolCallId } from './vertex-gemini-response.ts';

// streamGenerateContent?alt=sse → OpenAI chat.completion.chunk frames, event by event (each
// upstream event parsed once). Each
// Gemini event is a GenerateContentResponse carrying the next text (or whole function
// calls); the last one carries finishReason and the final usageMetadata. OpenAI's usage
// chunk (empty choices) is sent only when the client asked with stream_options.include_usage.

type Json = Record<string, unknown>;

interface ChoiceState {
  toolCalls: number;
  finished: boolean;
}

export class GeminiStreamTranslator implements SseFrameSource {
  readonly #events = new SseEventTranslator({
    event: (frame, out) => this.#handle(frame, out),
    end: (out) => this.#finish(out),
  });
  /** Where this step's frames go (the array of the push or end under way). */
  #out: SseFrame[] = [];
  readonly #model: string;
  readonly #includeUsage: boolean;
  readonly #provider: string;
  readonly #choices = new Map<number, ChoiceState>();
  #id: string | undefined;
  #created = nowSeconds();
  #usage: ChatUsage | undefined;
  #failed = false;

  constructor(request: Json, provider = 'vertex-ai') {
    this.#model = typeof request['model'] === 'string' ? request['model'] : '';
    const streamOptions = request['stream_options'];
    this.#includeUsage =
      typeof streamOptions === 'object' && streamOptions !== null && (streamOptions as Json)['include_usage'] === true;
    this.#provider = provider;
  }

  push(chunk: Buffer | Uint8Array | string): SseFrame[] {
    return this.#events.push(chunk);
  }

  end(): SseFrame[] {
    return this.#events.end();
  }

  #finish(out: SseFrame[]): void {
    if (this.#failed) return;
    this.#out = out;
    if (this.#includeUsage && this.#usage !== undefined) {
      out.push(SseFrame.of(chatCompletionChunk(this.#chunkId(), this.#model, this.#created, undefined, null, this.#usage)));
    }
    out.push(DONE_FRAME);
  }

  #handle(event: SseFrame, out: SseFrame[]): void {
    if (this.#failed) return;
    this.#out = out;
    const data = event.data.trim();
    if (data === '' || data === '[DONE]') return;
    const payload = event.json;
    if (payload === NOT_JSON) {
      this.#fail('vertex-ai sent a stream event that is not JSON.', 'INTERNAL');
      return;
    }
    const error = googleError(payload);
    if (error !== undefined) {
      this.#fail(error.message, error.status);
      return;
    }
    this.#response(typeof payload === 'object' && payload !== null ? (payload as Json) : {});
  }

  #response(body: Json): void {
    if (this.#id === undefined) {
      this.#id = completionId(body['responseId']);
      if (typeof body['createTime'] === 'string' && Number.isFinite(Date.parse(body['createTime']))) {
        this.#created = Math.floor(Date.parse(body['createTime']) / 1000);
      }
    }
    const candidates = Array.isArray(body['candidates']) ? (body['candidates'] as unknown[]) : [];
    candidates.forEach((raw, position) => {
      const candidate = typeof raw === 'object' && raw !== null ? (raw as Json) : {};
      const index = typeof candidate['index'] === 'number' ? candidate['index'] : position;
      const state = this.#choice(index);
      const { text, toolCalls } = candidateParts(candidate);
      if (text !== '') this.#emit(index, { content: text });
      for (const call of toolCalls) {
        this.#emit(index, {
          tool_calls: [{ index: state.toolCalls++, id: toolCallId(), type: 'function', function: call }],
        });
      }
      if (candidate['finishReason'] !== undefined && !state.finished) {
        state.finished = true;
        this.#emit(index, {}, openaiFinishReason(candidate['finishReason'], state.toolCalls > 0));
      }
    });
    const feedback = body['promptFeedback'];
    const blocked = typeof feedback === 'object' && feedback !== null ? (feedback as Json)['blockReason'] : undefined;
    if (candidates.length === 0 && blocked !== undefined && !this.#choice(0).finished) {
      this.#choice(0).finished = true;
      this.#emit(0, {}, 'content_filter');
    }
    this.#usage = geminiUsage(body['usageMetadata']) ?? this.#usage;
  }

  /** The state of one choice; its first chunk (role, empty content, as OpenAI sends) goes out on first sight. */
  #choice(index: number): ChoiceState {
    let state = this.#choices.get(index);
    if (state === undefined) {
      state = { toolCalls: 0, finished: false };
      this.#choices.set(index, state);
      this.#emit(index, { role: 'assistant', content: '' });
    }
    return state;
  }

  #emit(index: number, delta: ChatChunkDelta, finishReason: string | null = null): void {
    const chunk = chatCompletionChunk(this.#chunkId(), this.#model, this.#created, delta, finishReason);
    const choice = (chunk['choices'] as Json[])[0];
    if (choice !== undefined) choice['index'] = index;
    this.#out.push(SseFrame.of(chunk));
  }

  #chunkId(): string {
    this.#id ??= completionId(undefined);
    return this.#id;
  }

  /** A mid-stream error becomes one OpenAI error event (the SDKs raise it), and the stream ends. */
  #fail(message: string, status: string | undefined): void {
    this.#failed = true;
    this.#out.push(SseFrame.of(vertexErrorBody({ message, status }, 500, this.#provider)));
  }
}
