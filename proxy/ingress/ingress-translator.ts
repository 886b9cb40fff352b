import type { IncomingHttpHeaders } from 'node:http';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { ProviderAdapter, ResolvedTarget } from '../providers/provider-adapter.ts';
import type { AnswerUsage, UsageTapSink } from '../ratelimit/usage-tap.ts';
import type { SseFrameStage } from '../streams/sse-frame-pipeline.ts';

// One translator per client protocol (OpenAI chat/completions/embeddings, Responses,
// Anthropic Messages), as Envoy AI Gateway pairs a translator per client schema with one
// per provider. The handler gets it once per request, from the parsed body; it says what
// the pipeline forwards, turns the provider's answer back into the client's shape, and
// reads the answer's usage — the one place usage is read for that protocol.

/** How a client protocol's answers report usage: read here, written to the request once. */
export interface UsageReading {
  /** The usage of a whole answer as the client gets it (or of the `{ usage, model }` a large answer's scanner read). */
  answerUsage(answer: unknown): AnswerUsage | undefined;
  /**
   * The stream's usage stage (a stage of the relay's frame pipeline): tells `sink` the
   * answer's usage once, counts content events for the estimate, and — `strip` — cuts the
   * usage the gateway asked for and the client did not.
   */
  usageStage(sink: UsageTapSink, strip: boolean): SseFrameStage;
}

/** A failure after the status was sent, for the client's wire format to word as an event. */
export interface StreamFailure {
  /** The HTTP status the failure would have had before the stream began. */
  readonly status: number;
  /** OpenAI's error type (`timeout_error`, `api_error`). */
  readonly type: string;
  readonly message: string;
  readonly code: string;
}

/** What the relay asks of the client protocol about an answer on its way out. */
export interface AnswerReading extends UsageReading {
  /** A mid-stream failure (stall, oversize event) as the client's stream words it. */
  streamErrorEvent(failure: StreamFailure): string;
}

export interface IngressTranslator extends AnswerReading {
  /** True when the gateway asks the provider for stream usage the client may not have asked for (OpenAI chat and completions). */
  readonly asksStreamUsage: boolean;
  /** The request headers routing reads. */
  routingHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders;
  /** The body the walk forwards: `body` itself, or with what travels beside it for providers (never serialised). */
  forwardedBody(body: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown>;
  /** A guardrail denial (the OpenAI-shaped 446 body with hook_results) in the client's shape. */
  deniedBody(openaiShaped: Record<string, unknown>): Record<string, unknown>;
  /** True when the client's stream has a place for output checks' hook_results (OpenAI: a chunk before [DONE]); else checks hold the stream. */
  readonly streamResultsTail: boolean;
  /** Output checks will read the streamed answer: the translator assembles it as it passes, if it does (else the relay does). */
  collectStreamedAnswer(): void;
  /** The streamed answer it assembled, once the stream has passed; undefined when it assembles none. */
  streamedAnswer(): Record<string, unknown> | undefined;
  /** The hooks the relay translates the answering target's answer with (`requestBody`: the body as sent). */
  answerAdapter(target: ResolvedTarget, requestBody: Record<string, unknown>): ProviderAdapter;
  /** What the cache key covers of the request: the body, and whatever else changes the answer. */
  cacheKeyBody(body: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown>;
  /** The cache's assembler of a streamed answer into the plain one it stores. */
  streamAssembler(endpoint: InferenceEndpoint): CacheAssembler;
  /** A stored plain answer replayed as the client's stream; undefined when it cannot be. */
  replayAsSse(endpoint: InferenceEndpoint, answer: unknown, includeUsage: boolean): string | undefined;
}

/** A stage that assembles the stream it sees into the equivalent plain answer. */
export interface CacheAssembler extends SseFrameStage {
  /** The plain answer, or undefined unless the stream was whole and successful. */
  result(): Record<string, unknown> | undefined;
}
