import type { IncomingHttpHeaders } from 'node:http';
import { StreamAssembler } from '../../cache/stream-assembler.ts';
import { replayAsSse } from '../../cache/stream-replay.ts';
import type { InferenceEndpoint } from '../../openai/inference-endpoint.ts';
import type { ProviderAdapter, ResolvedTarget } from '../../providers/provider-adapter.ts';
import { UsageStage, usageOf, type AnswerUsage, type UsageTapSink } from '../../ratelimit/usage-tap.ts';
import type { SseFrameStage } from '../../streams/sse-frame-pipeline.ts';
import type { CacheAssembler, IngressTranslator, StreamFailure } from '../ingress-translator.ts';

// The OpenAI client protocol (chat completions, completions, embeddings): the identity
// translator. The pipeline's vocabulary is OpenAI's, so the body goes as the client sent it
// and the answer comes back as the provider's adapter made it. Nothing in it is per request,
// so one instance per endpoint serves every request (no allocation).

/** OpenAI's mid-stream error: a data-only event with an `error` member (the SDKs raise it as an APIError). */
export function openAIStreamErrorEvent(failure: StreamFailure): string {
  const error = { message: failure.message, type: failure.type, param: null, code: failure.code };
  return `data: ${JSON.stringify({ error })}\n\n`;
}

/** The OpenAI-shaped answers' usage (chat, completions, embeddings, responses): usage-tap's reading. */
export class OpenAIIngress implements IngressTranslator {
  readonly asksStreamUsage: boolean;

  constructor(options: { asksStreamUsage: boolean }) {
    this.asksStreamUsage = options.asksStreamUsage;
  }

  routingHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
    return headers;
  }

  forwardedBody(body: Record<string, unknown>): Record<string, unknown> {
    return body;
  }

  deniedBody(openaiShaped: Record<string, unknown>): Record<string, unknown> {
    return openaiShaped;
  }

  readonly streamResultsTail = true;

  collectStreamedAnswer(): void {
    // The relay's hold assembles OpenAI streams.
  }

  streamedAnswer(): undefined {
    return undefined;
  }

  answerAdapter(target: ResolvedTarget): ProviderAdapter {
    return target.adapter;
  }

  answerUsage(answer: unknown): AnswerUsage | undefined {
    return usageOf(answer);
  }

  usageStage(sink: UsageTapSink, strip: boolean): SseFrameStage {
    return new UsageStage(strip, sink);
  }

  streamErrorEvent(failure: StreamFailure): string {
    return openAIStreamErrorEvent(failure);
  }

  cacheKeyBody(body: Record<string, unknown>): Record<string, unknown> {
    return body;
  }

  streamAssembler(endpoint: InferenceEndpoint): CacheAssembler {
    return new StreamAssembler(endpoint);
  }

  replayAsSse(endpoint: InferenceEndpoint, answer: unknown, includeUsage: boolean): string | undefined {
    return replayAsSse(endpoint, answer, { includeUsage });
  }
}

/** Chat completions and completions: streams report usage only when asked, so the gateway asks. */
export const OPENAI_CHAT_INGRESS: IngressTranslator = new OpenAIIngress({ asksStreamUsage: true });

/** Embeddings: no stream, usage in every answer. */
export const OPENAI_EMBEDDINGS_INGRESS: IngressTranslator = new OpenAIIngress({ asksStreamUsage: false });
