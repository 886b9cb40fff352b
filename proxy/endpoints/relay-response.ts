import { pipeline, Readable, type Transform } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { GatewayError } from '../errors.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { completePlainAnswer, type PlainAnswer } from '../upstream/call-target.ts';
import { MAX_RELAYED_PLAIN_BYTES } from '../upstream/plain-answer-limits.ts';
import type { BodyPrefix } from '../upstream/read-body.ts';
import { JsonUsageScanner } from '../streams/json-usage-scanner.ts';
import { discard, MAX_ERROR_BODY_BYTES, relayedHeaders, type GuardedResponse } from '../upstream/guarded-call.ts';
import { readBodyText } from '../upstream/read-body.ts';
import { SseEventSizeGuard, SseEventTooLargeError } from '../providers/sse-parser.ts';
import type { AnswerObserver } from './response-caching.ts';
import type { RequestContext } from '../request-context.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { modelOf, type AnswerUsage, type UsageTapSink } from '../ratelimit/usage-tap.ts';
import type { AnswerReading, StreamFailure } from '../ingress/ingress-translator.ts';
import { SseFrameFlow, type SseFrameStage } from '../streams/sse-frame-pipeline.ts';
import { FrameRelay, PASS_THROUGH, type RelayFailure, type RelayStep } from '../streams/frame-relay.ts';
import { StreamAssembler } from '../cache/stream-assembler.ts';
import { sendPlain, sendRelayed } from './plain-write.ts';

// Upstream answer → client. Success bodies are relayed byte for byte (streams chunk by
// chunk; plain answers in one write) unless the provider's adapter translates them; a
// plain JSON answer is never re-serialised. Error bodies are read (bounded) and normalised
// to the OpenAI shape, status kept. Usage and timings are noted for metrics and limits.

/**
 * Most bytes of a stream held back for output guardrails that may deny it (the client sees
 * nothing until they pass). Past it the answer is refused with a 502: holding more per
 * request would let one stream exhaust the gateway's memory.
 */
export const MAX_HELD_STREAM_BYTES = 16 * 1024 * 1024;

export interface RelayInput {
  readonly upstream: GuardedResponse;
  readonly target: ResolvedTarget;
  readonly endpoint: InferenceEndpoint;
  /** The request body as sent (after overrides), for transforms that echo request fields. */
  readonly requestBody: Record<string, unknown>;
  /** A plain answer already read and parsed by the attempt. */
  readonly plain: PlainAnswer | undefined;
  /** request_timeout in force: a stream idle for longer ends with an error event. */
  readonly streamIdleTimeoutMs?: number | undefined;
  /** Drop the usage chunk of a stream: the gateway asked for usage the client did not. */
  readonly stripStreamUsage?: boolean | undefined;
  /** The client protocol (its ingress translator): the one reading of the answer's usage, the wording of a mid-stream failure. */
  readonly ingress: AnswerReading;
  /** Output guardrails on a plain answer as the client gets it (translated, if it was): a replacement status and body (246 / 446 / hook_results). */
  readonly finishPlain?: ((answer: unknown) => Promise<{ status: number; body: unknown } | undefined>) | undefined;
  /** Output guardrails on a stream: `tail` adds results before [DONE]; `hold` buffers until the checks pass. */
  readonly streamGuard?: StreamGuard | undefined;
  /** Sees a fresh successful answer (the cache stores it). */
  readonly observer?: AnswerObserver | undefined;
  readonly context: RequestContext;
}


export type StreamGuard =
  | { readonly mode: 'tail'; readonly tail: () => SseFrameStage }
  | {
      readonly mode: 'hold';
      /** `assembled`: the chat/text completion rebuilt from the stream's frames as they passed (undefined when it is not one). */
      readonly check: (collected: Buffer, assembled?: unknown) => Promise<{ status: number; body?: unknown; event?: string }>;
    };

export async function relayResponse(reply: FastifyReply, input: RelayInput): Promise<FastifyReply> {
  const { upstream, target, context } = input;
  const status = upstream.statusCode;
  if (status >= 300 && status < 400) {
    // guardedCall already refuses these; kept so no path can relay one.
    discard(upstream.body);
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with a redirect (${status}); redirects are not followed.`);
  }
  reply.headers(relayedHeaders(upstream.headers, upstream.redact));
  reply.code(status);
  if (status < 200 || status >= 300) {
    // Some providers quote the credential they refused; it never goes back out through us.
    const text = upstream.redact(await readBodyText(upstream.body, MAX_ERROR_BODY_BYTES));
    context.upstreamDoneAt = process.hrtime.bigint();
    const body = target.adapter.normaliseError(status, text, target.provider);
    body.error.message = upstream.redact(body.error.message);
    context.errorCode = body.error.code ?? `upstream_${status}`;
    reply.removeHeader('content-length');
    reply.removeHeader('content-encoding');
    reply.header('content-type', 'application/json; charset=utf-8');
    return reply.send(body);
  }
  if (input.plain === undefined) {
    if (input.streamGuard?.mode !== 'hold') {
      const { source, step, failure } = streamAnswer(reply, input, undefined);
      return sendRelayed(reply, source, step, failure);
    }
    // The cache stores a held stream only once the checks let it out.
    let release: (passed: boolean) => void = () => undefined;
    const passed = new Promise<boolean>((resolve) => {
      release = resolve;
    });
    const { source, step, failure, assembled } = streamAnswer(reply, input, passed);
    const stream = new FrameRelay(source, step, failure);
    try {
      const sent = await holdStream(reply, stream, input.streamGuard, input.upstream, assembled);
      release(reply.statusCode < 400);
      return sent;
    } finally {
      release(false);
    }
  }
  let plain = input.plain;
  if (plain.partial !== undefined) {
    // Larger than the attempt holds: relayed as it comes unless something must parse it.
    if (target.adapter.transformResponse === undefined && input.finishPlain === undefined) return relayLargePlain(reply, input, plain.partial);
    const completed = await completePlainAnswer(upstream, plain, target.provider);
    if (reply.raw.destroyed) completed.release();
    else reply.raw.once('close', completed.release);
    plain = completed.plain;
  }
  const { out, answer } = plainAnswer(reply, input, plain);
  if (input.finishPlain === undefined) {
    input.observer?.plain(Buffer.isBuffer(out) ? out : Buffer.from(out), answer);
    return sendPlain(reply, out);
  }
  // Output checks see (and a 246 returns) the answer the client gets: translated, if it was.
  // An answer they deny is not stored: a later hit would skip them.
  const replacement = await input.finishPlain(answer);
  if (replacement === undefined || replacement.status < 400) input.observer?.plain(Buffer.isBuffer(out) ? out : Buffer.from(out), answer);
  if (replacement === undefined) return sendPlain(reply, out);
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
  return reply.code(replacement.status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(replacement.body));
}

/** Output guardrails that may deny a stream: nothing goes out until they have passed. */
async function holdStream(
  reply: FastifyReply,
  stream: Readable,
  guard: Extract<StreamGuard, { mode: 'hold' }>,
  upstream: GuardedResponse,
  assembled: StreamAssembler | undefined,
): Promise<FastifyReply> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buffer.length;
    if (size > MAX_HELD_STREAM_BYTES) {
      stream.destroy();
      discard(upstream.body);
      throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `The streamed answer is larger than ${MAX_HELD_STREAM_BYTES} bytes, the most held for output guardrails.`);
    }
    chunks.push(buffer);
  }
  const collected = Buffer.concat(chunks, size);
  const verdict = await guard.check(collected, assembled?.result());
  if (verdict.body !== undefined) {
    reply.removeHeader('content-length');
    return reply.code(verdict.status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(verdict.body));
  }
  const text = collected.toString('latin1');
  const done = text.lastIndexOf('data: [DONE]');
  const out = verdict.event === undefined ? collected : done === -1 ? Buffer.concat([collected, Buffer.from(verdict.event)]) : Buffer.from(text.slice(0, done) + verdict.event + text.slice(done), 'latin1');
  reply.removeHeader('content-length');
  return reply.code(verdict.status).send(out);
}

/**
 * A plain answer was read whole by the attempt: one write to the client, a content-length,
 * and the usage read without a second pass. Bytes are relayed unchanged unless the
 * provider's adapter translates them.
 */
function plainAnswer(reply: FastifyReply, input: RelayInput, plain: PlainAnswer): { out: Buffer | string; answer: unknown } {
  const { target, endpoint, requestBody, context } = input;
  const { bytes, parsed } = plain;
  context.upstreamDoneAt = process.hrtime.bigint();
  const transform = target.adapter.transformResponse;
  if (transform === undefined) {
    noteUsage(parsed, input);
    return { out: bytes, answer: parsed };
  }
  if (parsed === undefined) {
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with invalid JSON.`);
  }
  const transformed = transform(endpoint, parsed, requestBody);
  noteUsage(transformed, input);
  const out = JSON.stringify(transformed);
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
  reply.header('content-type', 'application/json; charset=utf-8');
  return { out, answer: transformed };
}

/**
 * A large untranslated plain answer nobody checks: relayed chunk by chunk with its length
 * (a cut answer is visibly short), usage and model read from the bytes as they pass. Not
 * stored in the cache (an entry that size is over the cache's entry limit anyway).
 */
function relayLargePlain(reply: FastifyReply, input: RelayInput, prefix: BodyPrefix): FastifyReply {
  const { upstream, context } = input;
  const length = upstream.headers['content-length'];
  if (typeof length === 'string' && /^\d{1,15}$/.test(length)) reply.header('content-length', length);
  const body = upstream.body;
  async function* answer(): AsyncGenerator<Buffer> {
    yield* prefix.chunks;
    let size = prefix.size;
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > MAX_RELAYED_PLAIN_BYTES) {
        discard(body);
        throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `The provider's answer is larger than ${MAX_RELAYED_PLAIN_BYTES} bytes.`);
      }
      yield chunk as Buffer;
    }
  }
  const scanner = new JsonUsageScanner((members) => {
    context.upstreamDoneAt = process.hrtime.bigint();
    noteUsage(members, input);
  });
  // A failure mid-answer destroys the client's response: it sees a cut body, not a whole one.
  pipeline(Readable.from(answer()), scanner, (error) => {
    if (error !== undefined && error !== null) discard(body);
  });
  return reply.send(scanner);
}

/**
 * A stream passes chunk by chunk. It is split into SSE frames once (after the provider's
 * translation, if any), and the frames go through the stages — guardrail tail, cache
 * assembler, usage tap, the held answer's assembler — sharing each event's one parse.
 * Returns the relay's parts: written into the response (sendRelayed), or read as a stream.
 */
function streamAnswer(
  reply: FastifyReply,
  input: RelayInput,
  released: Promise<boolean> | undefined,
): { source: Readable; step: RelayStep; failure: RelayFailure; assembled: StreamAssembler | undefined } {
  const { upstream, target, endpoint, requestBody, context } = input;
  upstream.body.once('data', () => {
    context.ttftMs = Number(process.hrtime.bigint() - context.startedAt) / 1e6;
  });
  upstream.body.once('end', () => {
    context.upstreamDoneAt = process.hrtime.bigint();
  });
  // The order is what each stage sees: the cache stores the answer with its hook_results
  // and usage; the held answer is checked as the client would get it.
  const stages: SseFrameStage[] = [];
  if (input.streamGuard?.mode === 'tail') stages.push(input.streamGuard.tail());
  if (input.observer !== undefined) stages.push(input.observer.stream(released));
  if (endpoint !== 'embeddings') {
    const sink = new StreamUsageSink(input);
    stages.push(input.ingress.usageStage(sink, input.stripStreamUsage === true));
  }
  let assembled: StreamAssembler | undefined;
  if (input.streamGuard?.mode === 'hold') {
    assembled = new StreamAssembler(endpoint);
    stages.push(assembled);
  }
  let source: Readable = upstream.body;
  let step: RelayStep = PASS_THROUGH;
  // A translator is the flow's source: the frames it builds are never split or parsed again.
  const translator = target.adapter.createStreamTranslator?.(endpoint, requestBody);
  if (translator !== undefined) {
    reply.removeHeader('content-length');
    reply.header('content-type', 'text/event-stream; charset=utf-8');
    reply.header('cache-control', 'no-cache');
    step = new SseFrameFlow(stages, { source: translator });
  } else if (stages.length > 0) {
    step = new SseFrameFlow(stages);
  } else if (/event-stream/i.test(String(upstream.headers['content-type'] ?? ''))) {
    // Relayed untouched: still, one oversize event ends the stream before anything buffers it.
    source = chain(source, new SseEventSizeGuard());
  }
  reply.removeHeader('content-length');
  // One hop to the client; a failure after the status went out ends it with an error event.
  return { source, step, failure: (error) => failureEvent(error, input), assembled };
}

/**
 * Where a stream's usage tap reports. A class, not an object literal with a getter and a
 * setter made per stream: measured, that literal kept each stream's objects alive through
 * the scavenges that followed it (promoted 20 KB a stream against 2; docs/performance.md).
 */
class StreamUsageSink implements UsageTapSink {
  readonly #input: RelayInput;

  constructor(input: RelayInput) {
    this.#input = input;
  }

  onUsage(usage: AnswerUsage, model: string | undefined): void {
    recordUsage(usage, model, this.#input);
  }

  /** A client that closes at [DONE] (the openai SDK does) got the whole answer, not a 499. */
  onDone(): void {
    this.#input.context.upstreamDoneAt ??= process.hrtime.bigint();
  }

  /** Written straight onto the context: the estimate reads it if the client leaves early. */
  get streamEvents(): number {
    return this.#input.context.streamEvents;
  }

  set streamEvents(value: number) {
    this.#input.context.streamEvents = value;
  }
}

function chain(source: Readable, next: Transform): Readable {
  source.on('error', (error) => next.destroy(error));
  return source.pipe(next);
}

function noteUsage(answer: unknown, input: RelayInput): void {
  const usage = input.ingress.answerUsage(answer);
  if (usage !== undefined) recordUsage(usage, modelOf(answer), input);
}

/** Usage and the answering model go on the context, once; limits and cost are settled at the end. */
function recordUsage(usage: AnswerUsage, model: string | undefined, input: RelayInput): void {
  input.context.usage = usage;
  if (model !== undefined) input.context.responseModel = model;
}


/**
 * Once the status is sent, a failure can no longer be a 4xx/5xx: a stream that stalls past
 * request_timeout or carries an oversize event ends with an error event instead (worded by
 * the client protocol), and the upstream request is aborted. Any other failure cuts the stream.
 */
function failureEvent(error: Error & { code?: string }, input: RelayInput): string | undefined {
  const { target, context, upstream } = input;
  let failure: StreamFailure;
  if (error instanceof SseEventTooLargeError) {
    failure = { status: 502, type: 'api_error', message: error.message, code: error.code };
  } else if (error.code === 'UND_ERR_BODY_TIMEOUT' && input.streamIdleTimeoutMs !== undefined) {
    failure = {
      status: 408,
      type: 'timeout_error',
      message: `The stream from ${target.provider} stalled for more than ${input.streamIdleTimeoutMs} ms (request_timeout).`,
      code: 'AIGW_ERR_REQUEST_TIMEOUT',
    };
  } else {
    return undefined;
  }
  context.errorCode = failure.code;
  discard(upstream.body);
  return input.ingress.streamErrorEvent(failure);
}
