import { PassThrough, type Readable, type Transform } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import type { PlainAnswer } from '../upstream/call-target.ts';
import { readBodyText } from '../upstream/read-body.ts';
import type { AnswerObserver } from './response-caching.ts';
import type { RequestContext } from '../request-context.ts';
import type { InferenceEndpoint } from './body-validation.ts';
import { SseUsageTap, usageOf, type AnswerUsage } from '../ratelimit/usage-tap.ts';

// Upstream answer → client. Success bodies are relayed byte for byte (streams chunk by
// chunk; plain answers in one write) unless the provider's adapter translates them; a
// plain JSON answer is never re-serialised. Error bodies are read (bounded) and normalised
// to the OpenAI shape, status kept. Usage and timings are noted for metrics and limits.

const MAX_ERROR_BODY = 1024 * 1024;

// Connection-level headers belong to each hop; cookies from a provider are not ours to set.
const DROPPED_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
  'set-cookie',
  'date',
  'server',
  'alt-svc',
]);

export interface RelayInput {
  readonly upstream: Dispatcher.ResponseData;
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
  /** Output guardrails on a plain answer: a replacement status and body (246 / 446 / hook_results). */
  readonly finishPlain?: ((parsed: unknown) => Promise<{ status: number; body: unknown } | undefined>) | undefined;
  /** Output guardrails on a stream: `tail` adds results before [DONE]; `hold` buffers until the checks pass. */
  readonly streamGuard?: StreamGuard | undefined;
  /** Sees a fresh successful answer (the cache stores it). */
  readonly observer?: AnswerObserver | undefined;
  /** Told the answer's total tokens, when the provider reported usage. */
  readonly onUsage?: ((tokens: number) => void) | undefined;
  readonly context: RequestContext;
}


export type StreamGuard =
  | { readonly mode: 'tail'; readonly tail: () => Transform }
  | { readonly mode: 'hold'; readonly check: (assembled: Buffer) => Promise<{ status: number; body?: unknown; event?: string }> };

export async function relayResponse(reply: FastifyReply, input: RelayInput): Promise<FastifyReply> {
  const { upstream, target, context } = input;
  const status = upstream.statusCode;
  if (status >= 300 && status < 400) {
    // Redirects are never followed nor passed on: a provider cannot steer anyone elsewhere.
    upstream.body.dump().catch(() => undefined);
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with a redirect (${status}); redirects are not followed.`);
  }
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value !== undefined && !DROPPED_HEADERS.has(name)) reply.header(name, value);
  }
  reply.code(status);
  if (status < 200 || status >= 300) {
    const text = await readBodyText(upstream.body, MAX_ERROR_BODY);
    context.upstreamDoneAt = process.hrtime.bigint();
    const body = target.adapter.normaliseError(status, text, target.provider);
    // Some providers quote the credential they refused; it never goes back out through us.
    if (target.apiKey !== undefined && target.apiKey.length >= 8 && body.error.message.includes(target.apiKey)) {
      body.error.message = body.error.message.split(target.apiKey).join('[redacted]');
    }
    context.errorCode = body.error.code ?? `upstream_${status}`;
    reply.removeHeader('content-length');
    reply.removeHeader('content-encoding');
    reply.header('content-type', 'application/json; charset=utf-8');
    return reply.send(body);
  }
  if (input.plain === undefined) {
    const stream = streamAnswer(reply, input);
    if (input.streamGuard?.mode !== 'hold') return reply.send(stream);
    return holdStream(reply, stream, input.streamGuard);
  }
  const bytes = plainAnswer(reply, input, input.plain);
  if (input.finishPlain === undefined) return reply.send(bytes);
  const replacement = await input.finishPlain(input.plain.parsed);
  if (replacement === undefined) return reply.send(bytes);
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
  return reply.code(replacement.status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(replacement.body));
}

/** Output guardrails that may deny a stream: nothing goes out until they have passed. */
async function holdStream(reply: FastifyReply, stream: Readable, guard: Extract<StreamGuard, { mode: 'hold' }>): Promise<FastifyReply> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  const collected = Buffer.concat(chunks);
  const verdict = await guard.check(collected);
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
function plainAnswer(reply: FastifyReply, input: RelayInput, plain: PlainAnswer): Buffer | string {
  const { target, endpoint, requestBody, context } = input;
  const { bytes, parsed } = plain;
  context.upstreamDoneAt = process.hrtime.bigint();
  const transform = target.adapter.transformResponse;
  if (transform === undefined) {
    noteUsage(parsed, input);
    input.observer?.plain(bytes, parsed);
    return bytes;
  }
  if (parsed === undefined) {
    throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with invalid JSON.`);
  }
  const transformed = transform(endpoint, parsed, requestBody);
  noteUsage(transformed, input);
  const out = JSON.stringify(transformed);
  input.observer?.plain(Buffer.from(out), transformed);
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
  reply.header('content-type', 'application/json; charset=utf-8');
  return out;
}

/** A stream passes chunk by chunk; usage is read from its frames on the way. */
function streamAnswer(reply: FastifyReply, input: RelayInput): Readable {
  const { upstream, target, endpoint, requestBody, context } = input;
  upstream.body.once('data', () => {
    context.ttftMs = Number(process.hrtime.bigint() - context.startedAt) / 1e6;
  });
  upstream.body.once('end', () => {
    context.upstreamDoneAt = process.hrtime.bigint();
  });
  let stream: Readable = upstream.body;
  const adapter = target.adapter;
  if (adapter.createStreamTransform !== undefined) {
    reply.removeHeader('content-length');
    reply.header('content-type', 'text/event-stream; charset=utf-8');
    reply.header('cache-control', 'no-cache');
    stream = chain(stream, adapter.createStreamTransform(endpoint, requestBody));
  }
  if (input.streamGuard?.mode === 'tail') stream = chain(stream, input.streamGuard.tail());
  if (input.observer !== undefined) {
    const watch = input.observer.stream();
    stream.on('data', (chunk: Buffer) => watch.push(chunk));
    stream.once('end', () => watch.end());
  }
  if (endpoint !== 'embeddings') {
    reply.removeHeader('content-length');
    stream = chain(stream, new SseUsageTap(input.stripStreamUsage === true, (usage) => recordUsage(usage, input)));
  }
  if (input.streamIdleTimeoutMs !== undefined) {
    reply.removeHeader('content-length');
    stream = endWithErrorEventOnTimeout(stream, target.provider, input.streamIdleTimeoutMs, context);
  }
  return stream;
}

function chain(source: Readable, next: Transform): Readable {
  source.on('error', (error) => next.destroy(error));
  return source.pipe(next);
}

function noteUsage(answer: unknown, input: RelayInput): void {
  const usage = usageOf(answer);
  if (usage !== undefined) recordUsage(usage, input);
}

function recordUsage(usage: AnswerUsage, input: RelayInput): void {
  input.context.usage = usage;
  if (usage.total !== undefined) input.onUsage?.(usage.total);
}


/**
 * A stream that stalls past request_timeout cannot get a 408 any more (the status is sent):
 * it ends with an OpenAI-shaped error event instead, which the SDKs raise as an APIError.
 */
function endWithErrorEventOnTimeout(source: Readable, provider: string, timeoutMs: number, context: RequestContext): Readable {
  const out = new PassThrough();
  source.pipe(out, { end: true });
  source.on('error', (error: Error & { code?: string }) => {
    source.unpipe(out);
    if (error.code !== 'UND_ERR_BODY_TIMEOUT') {
      out.destroy(error);
      return;
    }
    context.errorCode = 'AIGW_ERR_REQUEST_TIMEOUT';
    const event = {
      error: {
        message: `The stream from ${provider} stalled for more than ${timeoutMs} ms (request_timeout).`,
        type: 'timeout_error',
        param: null,
        code: 'AIGW_ERR_REQUEST_TIMEOUT',
      },
    };
    out.end(`data: ${JSON.stringify(event)}\n\n`);
  });
  return out;
}

