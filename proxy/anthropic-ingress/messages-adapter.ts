import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { GatewayError, type OpenAIErrorBody } from '../errors.ts';
import { isRecord } from '../providers/anthropic/anthropic-wire.ts';
import type { PlanInput, ProviderAdapter, UpstreamRequestPlan } from '../providers/provider-adapter.ts';
import { anthropicErrorBody, anthropicErrorType, ChatToMessagesStream, messageFromChatCompletion } from './chat-to-messages.ts';
import { chatRequestFromMessages } from './messages-to-chat.ts';
import { messagesStreamTap, type MessagesStreamReader } from './messages-stream-reader.ts';
import { SseFrameSplitter, translatedSource, type SseEventTranslation, type SseFrameSource } from '../providers/sse-parser.ts';

// /v1/messages on any provider. A family with native Messages support for the request's
// model (Anthropic; Claude on Bedrock and Vertex AI) gets the body as is and its answer is
// relayed unchanged; every other family gets the body translated to chat completions and
// its (already OpenAI-shaped) answer translated back. Errors come out in Anthropic's shape.
//
// Two halves, because the walk plans with the catalog's adapter and the relay transforms
// with whatever adapter it is handed: withMessagesIngress (in the catalog) adds planning
// and leaves the adapter's other hooks as they are — OpenAI answers on the other endpoints
// keep being relayed byte for byte — and messagesRelayAdapter is what the messages route
// hands the relay.

type Json = Record<string, unknown>;

function isMessagesEndpoint(endpoint: InferenceEndpoint): endpoint is 'messages' | 'messages.count_tokens' {
  return endpoint === 'messages' || endpoint === 'messages.count_tokens';
}

function native(adapter: ProviderAdapter, body: Json): boolean {
  return adapter.nativeMessages?.accepts(body) === true;
}

/** The catalog's adapter, able to plan /v1/messages calls. */
export function withMessagesIngress(inner: ProviderAdapter): ProviderAdapter {
  return {
    ...inner,
    supportsEndpoint: (endpoint) =>
      inner.supportsEndpoint(endpoint) || (isMessagesEndpoint(endpoint) && inner.supportsEndpoint('chat.completions')),
    planRequest: (input) => planMessages(inner, input),
  };
}

function planMessages(inner: ProviderAdapter, input: PlanInput): UpstreamRequestPlan | Promise<UpstreamRequestPlan> {
  const { endpoint, body, target } = input;
  if (!isMessagesEndpoint(endpoint) || native(inner, body)) return inner.planRequest(input);
  if (endpoint === 'messages.count_tokens') {
    throw new GatewayError(
      'AIGW_ERR_UNSUPPORTED_ENDPOINT',
      `Provider "${target.provider}" cannot count tokens for model "${String(body['model'])}": /v1/messages/count_tokens needs Anthropic, or Claude on Bedrock or Vertex AI.`,
      { param: 'model' },
    );
  }
  return inner.planRequest({ ...input, endpoint: 'chat.completions', body: chatRequestFromMessages(body), bodyChanged: true });
}

/**
 * The adapter the relay uses for a /v1/messages answer from `inner`'s provider. `reader`,
 * when given, sees the Anthropic events the client gets (usage, output guardrails).
 */
export function messagesRelayAdapter(inner: ProviderAdapter, request: Json, reader?: MessagesStreamReader): ProviderAdapter {
  const normaliseError = (status: number, text: string, provider: string): OpenAIErrorBody => anthropicError(inner, status, text, provider);
  // The client's Messages frames, read by `reader` as they pass: one split, one parse each.
  const tapped = (source: SseFrameSource | undefined, ...steps: SseEventTranslation[]): SseFrameSource =>
    translatedSource(source ?? new SseFrameSplitter(), ...steps, ...(reader === undefined ? [] : [messagesStreamTap(reader)]));
  if (native(inner, request)) {
    const hooks = inner.nativeMessages;
    const transform = hooks?.transformResponse;
    return {
      ...inner,
      normaliseError,
      transformResponse: transform === undefined ? undefined : (endpoint, body) => transform(endpoint, body),
      createStreamTranslator: (endpoint) => tapped(hooks?.createStreamTranslator?.(endpoint)),
    };
  }
  const chatRequest = chatRequestFromMessages(request);
  return {
    ...inner,
    normaliseError,
    transformResponse(_endpoint, body) {
      const chat = inner.transformResponse === undefined ? body : inner.transformResponse('chat.completions', body, chatRequest);
      const message = messageFromChatCompletion(chat, request);
      reader?.noteUsage(message['usage']);
      return message;
    },
    createStreamTranslator() {
      return tapped(inner.createStreamTranslator?.('chat.completions', chatRequest), new ChatToMessagesStream(request));
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

