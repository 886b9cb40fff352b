import { PassThrough, type Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import type { RequestContext } from '../request-context.ts';
import type { InferenceEndpoint } from './body-validation.ts';
import { SseUsageTap, tapJsonUsage, totalTokensOf } from '../ratelimit/usage-tap.ts';

// Upstream answer → client. Success bodies are relayed as a stream, byte for byte, so
// streaming (SSE) passes chunk by chunk and a plain JSON answer is never re-serialised.
// Error bodies are read (bounded) and normalised to the OpenAI shape, status kept.

const MAX_ERROR_BODY = 1024 * 1024;
const MAX_TRANSFORMED_BODY = 64 * 1024 * 1024;

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
  /** request_timeout in force: a stream idle for longer ends with an error event. */
  readonly streamIdleTimeoutMs?: number | undefined;
  /** Reads token usage for token rate limits; `strip` drops a usage chunk the client did not ask for. */
  readonly usageTap?: { readonly strip: boolean; readonly onUsage: (tokens: number) => void } | undefined;
  readonly context: RequestContext;
}

export async function relayResponse(reply: FastifyReply, input: RelayInput): Promise<FastifyReply> {
  const { upstream, target, endpoint, requestBody, context } = input;
  const status = upstream.statusCode;
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value !== undefined && !DROPPED_HEADERS.has(name)) reply.header(name, value);
  }
  reply.code(status);
  if (status >= 200 && status < 300) {
    const adapter = target.adapter;
    const streaming = requestBody['stream'] === true;
    if (!streaming && adapter.transformResponse !== undefined) {
      const text = await readBounded(upstream.body, MAX_TRANSFORMED_BODY);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with invalid JSON.`, { cause: error });
      }
      reply.removeHeader('content-length');
      reply.header('content-type', 'application/json; charset=utf-8');
      const transformed = adapter.transformResponse(endpoint, parsed, requestBody);
      const tokens = input.usageTap === undefined ? undefined : totalTokensOf(transformed);
      if (tokens !== undefined) input.usageTap?.onUsage(tokens);
      return reply.send(JSON.stringify(transformed));
    }
    if (!streaming) return reply.send(input.usageTap === undefined ? upstream.body : tapJsonUsage(upstream.body, input.usageTap.onUsage));
    let stream: Readable = upstream.body;
    if (adapter.createStreamTransform !== undefined) {
      reply.removeHeader('content-length');
      reply.header('content-type', 'text/event-stream; charset=utf-8');
      reply.header('cache-control', 'no-cache');
      const transform = adapter.createStreamTransform(endpoint, requestBody);
      upstream.body.on('error', (error) => transform.destroy(error));
      stream = upstream.body.pipe(transform);
    }
    if (input.usageTap !== undefined) {
      reply.removeHeader('content-length');
      const tap = new SseUsageTap(input.usageTap.strip, input.usageTap.onUsage);
      const source = stream;
      source.on('error', (error) => tap.destroy(error));
      stream = source.pipe(tap);
    }
    if (input.streamIdleTimeoutMs !== undefined) {
      reply.removeHeader('content-length');
      stream = endWithErrorEventOnTimeout(stream, target.provider, input.streamIdleTimeoutMs, context);
    }
    return reply.send(stream);
  }

  const text = await readBounded(upstream.body, MAX_ERROR_BODY);
  const body = target.adapter.normaliseError(status, text, target.provider);
  context.errorCode = body.error.code ?? `upstream_${status}`;
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(body);
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

async function readBounded(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      body.destroy();
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
