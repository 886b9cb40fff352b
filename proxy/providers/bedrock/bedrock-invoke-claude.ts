import { Transform, type TransformCallback } from 'node:stream';
import type { InferenceEndpoint } from '../../openai/inference-endpoint.ts';
import { betaList, clientAnthropicHeaders, isRecord } from '../anthropic/anthropic-wire.ts';
import { EventStreamDecoder, type EventStreamMessage } from './bedrock-event-stream.ts';
import { EventStreamFramingError } from '../../errors.ts';

// Claude on Bedrock in the Anthropic Messages format (for /v1/messages):
//   messages       → POST /model/{id}/invoke | /invoke-with-response-stream
//   count_tokens   → POST /model/{id}/count-tokens  ({ input: { invokeModel: { body } } })
// The body is Anthropic's without `model` (it is in the URL) and `stream` (the path says
// it), plus anthropic_version; betas travel in the body as anthropic_beta. The stream is
// AWS event-stream framing whose `chunk` events carry Anthropic's events base64-encoded:
// they are unwrapped into Anthropic's named SSE events, unchanged.

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

type Json = Record<string, unknown>;

/** Claude models, their cross-region inference profiles and ARNs that name them. */
export function isBedrockClaude(model: unknown): boolean {
  return typeof model === 'string' && /anthropic|claude/i.test(model);
}

export function bedrockInvokePath(endpoint: InferenceEndpoint, model: string, stream: boolean): string {
  const action = endpoint === 'messages.count_tokens' ? 'count-tokens' : stream ? 'invoke-with-response-stream' : 'invoke';
  return `/model/${encodeURIComponent(model)}/${action}`;
}

export function bedrockInvokeBody(endpoint: InferenceEndpoint, body: Json): Json {
  const { model: _model, stream: _stream, ...rest } = body;
  // Object.entries leaves out the symbol-keyed client headers.
  const invoke: Json = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...Object.fromEntries(Object.entries(rest)) };
  const betas = betaList(clientAnthropicHeaders(body).betas);
  if (betas.length > 0) invoke['anthropic_beta'] = betas;
  if (endpoint !== 'messages.count_tokens') return invoke;
  // count_tokens bodies have no max_tokens; InvokeModel's schema wants one.
  return { input: { invokeModel: { body: JSON.stringify({ max_tokens: 1, ...invoke }) } } };
}

/** Bedrock's CountTokens answer `{ inputTokens }` → Anthropic's `{ input_tokens }`; messages pass as they are. */
export function bedrockInvokeAnswer(endpoint: InferenceEndpoint, answer: unknown): unknown {
  if (endpoint !== 'messages.count_tokens' || !isRecord(answer)) return answer;
  return { input_tokens: typeof answer['inputTokens'] === 'number' ? answer['inputTokens'] : 0 };
}

const EXCEPTION_TYPES: Readonly<Record<string, string>> = {
  throttlingException: 'rate_limit_error',
  serviceUnavailableException: 'overloaded_error',
  modelStreamErrorException: 'api_error',
  validationException: 'invalid_request_error',
  internalServerException: 'api_error',
  modelTimeoutException: 'timeout_error',
};

function sse(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}

/** invoke-with-response-stream (binary event stream) → Anthropic's SSE events. */
export class BedrockInvokeStream extends Transform {
  readonly #decoder = new EventStreamDecoder();
  #ended = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#ended) {
      callback();
      return;
    }
    let out = '';
    try {
      for (const message of this.#decoder.push(chunk)) {
        out += this.#translate(message);
        if (this.#ended) break;
      }
    } catch (error) {
      out += this.#fail(error instanceof EventStreamFramingError ? error.message : 'the Bedrock stream could not be read');
    }
    callback(null, out === '' ? undefined : out);
  }

  override _flush(callback: TransformCallback): void {
    const broken = !this.#ended && this.#decoder.pendingBytes > 0;
    callback(null, broken ? this.#fail('the Bedrock stream ended inside an event-stream message') : undefined);
  }

  #fail(message: string): string {
    this.#ended = true;
    return sse('error', JSON.stringify({ type: 'error', error: { type: 'api_error', message } }));
  }

  #translate(message: EventStreamMessage): string {
    const kind = message.headers[':message-type'];
    if (kind === 'exception' || kind === 'error') {
      const exception = message.headers[':exception-type'] ?? message.headers[':error-code'] ?? 'internalServerException';
      let text = message.headers[':error-message'] ?? exception;
      const payload = parse(message.payload.toString('utf8'));
      if (isRecord(payload) && typeof payload['message'] === 'string') text = payload['message'];
      this.#ended = true;
      return sse('error', JSON.stringify({ type: 'error', error: { type: EXCEPTION_TYPES[exception] ?? 'api_error', message: text } }));
    }
    if (message.headers[':event-type'] !== 'chunk') return '';
    const wrapper = parse(message.payload.toString('utf8'));
    if (!isRecord(wrapper) || typeof wrapper['bytes'] !== 'string') return '';
    const data = Buffer.from(wrapper['bytes'], 'base64').toString('utf8');
    const event = parse(data);
    if (!isRecord(event) || typeof event['type'] !== 'string') return '';
    return sse(event['type'], data);
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
