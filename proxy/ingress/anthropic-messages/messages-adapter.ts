import type { OpenAIErrorBody } from '../../errors.ts';
import { isRecord } from '../../providers/anthropic/anthropic-wire.ts';
import type { ProviderAdapter } from '../../providers/provider-adapter.ts';
import { anthropicErrorBody, anthropicErrorType, ChatToMessagesStream, messageFromChatCompletion } from './chat-to-messages.ts';
import { SseFrameSplitter, translatedSource, type SseFrameSource } from '../../providers/sse-parser.ts';

// /v1/messages on any provider, the answer side. A family with native Messages support for
// the request's model (Anthropic; Claude on Bedrock and Vertex AI) had the body as is and
// its answer is relayed unchanged; every other family had the body translated to chat
// completions (messages-ingress.ts, once per request) and its (already OpenAI-shaped)
// answer is translated back here. Errors come out in Anthropic's shape.

type Json = Record<string, unknown>;

/** True when `adapter`'s family takes this Messages body as is. */
export function nativeFor(adapter: ProviderAdapter, body: Json): boolean {
  return adapter.nativeMessages?.accepts(body) === true;
}

/**
 * The adapter the relay uses for a /v1/messages answer from `inner`'s provider: `request`
 * is the Messages body as sent, `chatRequest` its chat translation (for a family that is
 * not native), made once by the ingress and not again here.
 */
export function messagesRelayAdapter(inner: ProviderAdapter, request: Json, chatRequest: Json | undefined): ProviderAdapter {
  const normaliseError = (status: number, text: string, provider: string): OpenAIErrorBody => anthropicError(inner, status, text, provider);
  if (chatRequest === undefined) {
    const hooks = inner.nativeMessages;
    const transform = hooks?.transformResponse;
    const translator = hooks?.createStreamTranslator;
    return {
      ...inner,
      normaliseError,
      transformResponse: transform === undefined ? undefined : (endpoint, body) => transform(endpoint, body),
      // Always a source, so the relay words the stream's headers as for every translated one.
      createStreamTranslator: (endpoint) => translator?.(endpoint) ?? new SseFrameSplitter(),
    };
  }
  return {
    ...inner,
    normaliseError,
    transformResponse(_endpoint, body) {
      const chat = inner.transformResponse === undefined ? body : inner.transformResponse('chat.completions', body, chatRequest);
      return messageFromChatCompletion(chat, request);
    },
    createStreamTranslator() {
      const chatFrames: SseFrameSource = inner.createStreamTranslator?.('chat.completions', chatRequest) ?? new SseFrameSplitter();
      return translatedSource(chatFrames, new ChatToMessagesStream(request));
    },
  };
}

/**
 * The provider's error in Anthropic's shape. Typed as the OpenAI body the relay expects:
 * both carry `error.message` (redacted by the relay) and the relay sends it as given.
 */
function anthropicError(inner: ProviderAdapter, status: number, text: string, provider: string): OpenAIErrorBody {
  const parsed = parseJson(text);
  if (isRecord(parsed) && parsed['type'] === 'error' && isRecord(parsed['error']) && typeof parsed['error']['message'] === 'string') {
    const error = parsed['error'];
    return anthropicErrorBody(typeof error['type'] === 'string' ? error['type'] : anthropicErrorType(status), error['message'] as string) as unknown as OpenAIErrorBody;
  }
  const openai = inner.normaliseError(status, text, provider);
  return anthropicErrorBody(anthropicErrorType(status), openai.error.message) as unknown as OpenAIErrorBody;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

