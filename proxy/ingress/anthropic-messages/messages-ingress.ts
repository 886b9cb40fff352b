import type { IncomingHttpHeaders } from 'node:http';
import { MessagesStreamAssembler } from '../../cache/messages-stream-assembler.ts';
import { replayMessageAsSse } from '../../cache/messages-stream-replay.ts';
import { GatewayError } from '../../errors.ts';
import type { InferenceEndpoint } from '../../openai/inference-endpoint.ts';
import { CLIENT_ANTHROPIC_HEADERS } from '../../providers/anthropic/anthropic-wire.ts';
import type { PlanInput, ProviderAdapter, ResolvedTarget } from '../../providers/provider-adapter.ts';
import { CLIENT_PROTOCOL, type ClientProtocolPlanning } from '../../providers/provider-catalog.ts';
import type { AnswerUsage, UsageTapSink } from '../../ratelimit/usage-tap.ts';
import type { SseFrameStage } from '../../streams/sse-frame-pipeline.ts';
import type { CacheAssembler, IngressTranslator, StreamFailure } from '../ingress-translator.ts';
import { anthropicErrorBody, anthropicErrorType } from './chat-to-messages.ts';
import { messagesRelayAdapter, nativeFor } from './messages-adapter.ts';
import { anthropicDeniedBody, cacheKeyBodyOf, clientAnthropicHeadersOf, messagesRoutingHeaders } from './messages-request.ts';
import { chatRequestFromMessages } from './messages-to-chat.ts';
import { MessagesStreamReader, MessagesUsageStage, messageUsageOf } from './messages-stream-reader.ts';

// Anthropic's Messages API (POST /v1/messages and /v1/messages/count_tokens) as one
// translator per request. It rides on the body the walk forwards (CLIENT_PROTOCOL), so the
// catalog's adapters ask it how to plan for each target: a family native for the model
// gets the body as is, any other the chat translation, made once and kept for the relay,
// which turns the chat answer back into a Message with it. Usage is read from the Anthropic
// answer or events here, once.

type Json = Record<string, unknown>;

const NOT_TRANSLATED: unique symbol = Symbol('not translated');

export class MessagesIngress implements IngressTranslator, ClientProtocolPlanning {
  readonly asksStreamUsage = false;
  readonly #endpoint: InferenceEndpoint;
  /** Output guardrails read the streamed Message: collect its content. */
  #collectContent = false;
  #reader: MessagesStreamReader | undefined;
  // The chat translation of the one body a target gets: the client's body, or it with the
  // target's override_params (keyed by that object, constant per target).
  #chatKey: unknown = NOT_TRANSLATED;
  #chat: Json | undefined;
  #translations = 0;

  constructor(endpoint: InferenceEndpoint) {
    this.#endpoint = endpoint;
  }

  /** How many times the body was translated to chat (once per request, or once per distinct override_params). */
  get translations(): number {
    return this.#translations;
  }

  routingHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
    return messagesRoutingHeaders(headers);
  }

  /** The body with the client's anthropic-version and -beta (for native families) and this translator (for the others). */
  forwardedBody(body: Json, headers: IncomingHttpHeaders): Json {
    return { ...body, [CLIENT_ANTHROPIC_HEADERS]: clientAnthropicHeadersOf(headers), [CLIENT_PROTOCOL]: this };
  }

  planInputFor(adapter: ProviderAdapter, input: PlanInput): PlanInput {
    if (nativeFor(adapter, input.body)) return input;
    if (this.#endpoint === 'messages.count_tokens') {
      throw new GatewayError(
        'AIGW_ERR_UNSUPPORTED_ENDPOINT',
        `Provider "${input.target.provider}" cannot count tokens for model "${String(input.body['model'])}": /v1/messages/count_tokens needs Anthropic, or Claude on Bedrock or Vertex AI.`,
        { param: 'model' },
      );
    }
    return { ...input, endpoint: 'chat.completions', body: this.#chatFor(input.target, input.body), bodyChanged: true };
  }

  answerAdapter(target: ResolvedTarget, requestBody: Json): ProviderAdapter {
    const chat = nativeFor(target.adapter, requestBody) ? undefined : this.#chatFor(target, requestBody);
    return messagesRelayAdapter(target.adapter, requestBody, chat);
  }

  #chatFor(target: ResolvedTarget, body: Json): Json {
    const key = target.node.override_params;
    if (this.#chatKey !== key || this.#chat === undefined) {
      this.#chat = chatRequestFromMessages(body);
      this.#chatKey = key;
      this.#translations++;
    }
    return this.#chat;
  }

  deniedBody(openaiShaped: Json): Json {
    return anthropicDeniedBody(openaiShaped);
  }

  /** Anthropic streams have no place for hook_results: output checks hold the stream. */
  readonly streamResultsTail = false;

  /** Output checks will read the streamed Message: the usage stage assembles it too. */
  collectStreamedAnswer(): void {
    this.#collectContent = true;
  }

  /** The streamed Message as the client got it, once the stream has passed. */
  streamedAnswer(): Json | undefined {
    return this.#reader?.result();
  }

  answerUsage(answer: unknown): AnswerUsage | undefined {
    return messageUsageOf(answer);
  }

  usageStage(sink: UsageTapSink): SseFrameStage {
    this.#reader ??= new MessagesStreamReader({ collectContent: this.#collectContent });
    return new MessagesUsageStage(this.#reader, sink);
  }

  cacheKeyBody(body: Json, headers: IncomingHttpHeaders): Json {
    return cacheKeyBodyOf(body, headers);
  }

  streamAssembler(): CacheAssembler {
    return new MessagesStreamAssembler();
  }

  /** A stored Message replayed as Anthropic's events. */
  replayAsSse(_endpoint: InferenceEndpoint, answer: unknown): string | undefined {
    return replayMessageAsSse(answer);
  }

  /** A stall or oversize event mid-stream as Anthropic words it: an `error` event, which its SDKs raise. */
  streamErrorEvent(failure: StreamFailure): string {
    return `event: error\ndata: ${JSON.stringify(anthropicErrorBody(anthropicErrorType(failure.status), failure.message))}\n\n`;
  }
}
