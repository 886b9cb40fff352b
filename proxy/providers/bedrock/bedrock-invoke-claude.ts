import { tokenCountOr } from '../../accounting/token-count.ts';
import { SseFrame, type SseFrameSource } from '../sse-parser.ts';
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
  return { input_tokens: tokenCountOr(answer['inputTokens'], 0) };
}

const EXCEPTION_TYPES: Readonly<Record<string, string>> = {
  throttlingException: 'rate_limit_error',
  serviceUnavailableException: 'overloaded_error',
  modelStreamErrorException: 'api_error',
  validationException: 'invalid_request_error',
  internalServerException: 'api_error',
  modelTimeoutException: 'timeout_error',
};

/** invoke-with-response-stream (binary event stream) → Anthropic's SSE frames, each event's JSON parsed once. */
export class BedrockInvokeTranslator implements SseFrameSource {
  readonly #decoder = new EventStreamDecoder();
  #ended = false;

  push(chunk: Buffer | Uint8Array | string): SseFrame[] {
    if (this.#ended) return [];
    const out: SseFrame[] = [];
    try {
      for (const message of this.#decoder.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))) {
        const frame = this.#translate(message);
        if (frame !== undefined) out.push(frame);
        if (this.#ended) break;
      }
    } catch (error) {
      out.push(this.#fail(error instanceof EventStreamFramingError ? error.message : 'the Bedrock stream could not be read'));
    }
    return out;
  }

  end(): SseFrame[] {
    const broken = !this.#ended && this.#decoder.pendingBytes > 0;
    return broken ? [this.#fail('the Bedrock stream ended inside an event-stream message')] : [];
  }

  #fail(message: string): SseFrame {
    this.#ended = true;
    const body = { type: 'error', error: { type: 'api_error', message } };
    return SseFrame.named('error', JSON.stringify(body), body);
  }

  #translate(message: EventStreamMessage): SseFrame | undefined {
    const kind = message.headers[':message-type'];
    if (kind === 'exception' || kind === 'error') {
      const exception = message.headers[':exception-type'] ?? message.headers[':error-code'] ?? 'internalServerException';
      let text = message.headers[':error-message'] ?? exception;
      const payload = parse(message.payload.toString('utf8'));
      if (isRecord(payload) && typeof payload['message'] === 'string') text = payload['message'];
      this.#ended = true;
      const body = { type: 'error', error: { type: EXCEPTION_TYPES[exception] ?? 'api_error', message: text } };
      return SseFrame.named('error', JSON.stringify(body), body);
    }
    if (message.headers[':event-type'] !== 'chunk') return undefined;
    const wrapper = parse(message.payload.toString('utf8'));
    if (!isRecord(wrapper) || typeof wrapper['bytes'] !== 'string') return undefined;
    const data = Buffer.from(wrapper['bytes'], 'base64').toString('utf8');
    const event = parse(data);
    if (!isRecord(event) || typeof event['type'] !== 'string') return undefined;
    return SseFrame.named(event['type'], data, event);
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
