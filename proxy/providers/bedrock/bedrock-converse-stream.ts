import { bedrockCompletionId, converseUsage, finishReasonOfStop, streamExceptionBody } from './bedrock-converse-response.ts';
import { EventStreamDecoder, type EventStreamMessage } from './bedrock-event-stream.ts';
import { chatCompletionChunk, nowSeconds, type ChatChunkDelta, type ChatUsage } from '../openai/openai-shapes.ts';
import { DONE_FRAME, SseFrame, type SseFrameSource } from '../sse-parser.ts';
import { EventStreamFramingError, type OpenAIErrorBody } from '../../errors.ts';

// ConverseStream (AWS binary event-stream) → OpenAI chat.completion.chunk frames, message by
// message as bytes arrive (the source of the relay's frame pipeline):
//
//   messageStart                         → first chunk { role: 'assistant', content: '' }
//   contentBlockStart (toolUse)          → tool_calls[i] with id, name, arguments ''
//   contentBlockDelta text               → { content }
//   contentBlockDelta toolUse.input      → tool_calls[i].function.arguments fragment
//   messageStop                          → final chunk with finish_reason
//   metadata                             → usage chunk (stream_options.include_usage)
//   end of stream                        → [DONE]
//   exception message / corrupt framing  → data: {"error":{…}} and the stream ends (no [DONE])
//   contentBlockStop, reasoning deltas   → nothing

type Json = Record<string, unknown>;
const PROVIDER = 'bedrock';

export class ConverseStreamTranslator implements SseFrameSource {
  readonly #decoder = new EventStreamDecoder();
  readonly #model: string;
  readonly #includeUsage: boolean;
  readonly #id = bedrockCompletionId();
  readonly #created = nowSeconds();
  /** OpenAI numbers tool calls 0, 1, …; Bedrock numbers all content blocks. */
  readonly #toolIndexByBlock = new Map<number, number>();
  #started = false;
  #usage: ChatUsage | undefined;
  #ended = false;

  constructor(request: Json) {
    this.#model = typeof request['model'] === 'string' ? request['model'] : '';
    const options = request['stream_options'];
    this.#includeUsage = typeof options === 'object' && options !== null && (options as Json)['include_usage'] === true;
  }

  push(chunk: Buffer | Uint8Array | string): SseFrame[] {
    if (this.#ended) return [];
    let messages: EventStreamMessage[];
    try {
      messages = this.#decoder.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    } catch (error) {
      return this.#fail(framingError(error));
    }
    const out: SseFrame[] = [];
    for (const message of messages) {
      if (this.#ended) break;
      out.push(...this.#translate(message));
    }
    return out;
  }

  end(): SseFrame[] {
    if (this.#ended) return [];
    if (this.#decoder.pendingBytes > 0) {
      return this.#fail(framingError(new EventStreamFramingError('bedrock stream ended inside an event-stream message')));
    }
    return [DONE_FRAME];
  }

  #translate(message: EventStreamMessage): SseFrame[] {
    const messageType = message.headers[':message-type'];
    const payload = parseJson(message.payload);
    if (messageType === 'exception' || messageType === 'error') {
      const type = message.headers[':exception-type'] ?? message.headers[':error-code'] ?? 'internalServerException';
      this.#ended = true;
      return [SseFrame.of(streamExceptionBody(type, payload ?? { message: message.headers[':error-message'] }, PROVIDER))];
    }
    if (payload === undefined) return [];
    switch (message.headers[':event-type']) {
      case 'messageStart':
        return this.#start();
      case 'contentBlockStart':
        return this.#blockStart(payload);
      case 'contentBlockDelta':
        return this.#blockDelta(payload);
      case 'messageStop':
        return [...this.#start(), ...this.#chunk({}, finishReasonOfStop(payload['stopReason']))];
      case 'metadata': {
        this.#usage = converseUsage(payload['usage']) ?? this.#usage;
        if (!this.#includeUsage || this.#usage === undefined) return [];
        return [SseFrame.of(chatCompletionChunk(this.#id, this.#model, this.#created, undefined, null, this.#usage))];
      }
      default:
        return [];
    }
  }

  /** The role chunk, once (also when a stream skips messageStart). */
  #start(): SseFrame[] {
    if (this.#started) return [];
    this.#started = true;
    return this.#chunk({ role: 'assistant', content: '' });
  }

  #blockStart(payload: Json): SseFrame[] {
    const start = asRecord(payload['start']);
    const toolUse = asRecord(start?.['toolUse']);
    const block = payload['contentBlockIndex'];
    if (toolUse === undefined || typeof block !== 'number') return this.#start();
    const index = this.#toolIndexByBlock.size;
    this.#toolIndexByBlock.set(block, index);
    return [
      ...this.#start(),
      ...this.#chunk({
        tool_calls: [{ index, id: String(toolUse['toolUseId']), type: 'function', function: { name: String(toolUse['name']), arguments: '' } }],
      }),
    ];
  }

  #blockDelta(payload: Json): SseFrame[] {
    const delta = asRecord(payload['delta']);
    if (delta === undefined) return [];
    if (typeof delta['text'] === 'string') return delta['text'] === '' ? [] : [...this.#start(), ...this.#chunk({ content: delta['text'] })];
    const input = asRecord(delta['toolUse'])?.['input'];
    const block = payload['contentBlockIndex'];
    const index = typeof block === 'number' ? this.#toolIndexByBlock.get(block) : undefined;
    if (typeof input !== 'string' || input === '' || index === undefined) return [];
    return this.#chunk({ tool_calls: [{ index, function: { arguments: input } }] });
  }

  #chunk(delta: ChatChunkDelta, finishReason: string | null = null): SseFrame[] {
    return [SseFrame.of(chatCompletionChunk(this.#id, this.#model, this.#created, delta, finishReason))];
  }

  #fail(body: OpenAIErrorBody): SseFrame[] {
    this.#ended = true;
    return [SseFrame.of(body)];
  }
}

function framingError(error: unknown): OpenAIErrorBody {
  const message = error instanceof EventStreamFramingError ? error.message : 'bedrock stream could not be decoded';
  return { error: { message, type: 'api_error', param: null, code: 'invalid_event_stream', provider: PROVIDER } };
}

function parseJson(payload: Buffer): Json | undefined {
  if (payload.length === 0) return {};
  try {
    return asRecord(JSON.parse(payload.toString('utf8')));
  } catch {
    return undefined;
  }
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
