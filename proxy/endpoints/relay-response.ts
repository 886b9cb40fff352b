import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import type { RequestContext } from '../request-context.ts';
import type { InferenceEndpoint } from './body-validation.ts';

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
    if (requestBody['stream'] === true && adapter.createStreamTransform !== undefined) {
      reply.removeHeader('content-length');
      reply.removeHeader('content-type');
      reply.header('content-type', 'text/event-stream; charset=utf-8');
      reply.header('cache-control', 'no-cache');
      const transform = adapter.createStreamTransform(endpoint, requestBody);
      upstream.body.on('error', (error) => transform.destroy(error));
      return reply.send(upstream.body.pipe(transform));
    }
    if (adapter.transformResponse !== undefined && requestBody['stream'] !== true) {
      const text = await readBounded(upstream.body, MAX_TRANSFORMED_BODY);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with invalid JSON.`, { cause: error });
      }
      reply.removeHeader('content-length');
      reply.header('content-type', 'application/json; charset=utf-8');
      return reply.send(JSON.stringify(adapter.transformResponse(endpoint, parsed, requestBody)));
    }
    return reply.send(upstream.body);
  }

  const text = await readBounded(upstream.body, MAX_ERROR_BODY);
  const body = target.adapter.normaliseError(status, text, target.provider);
  context.errorCode = body.error.code ?? `upstream_${status}`;
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(body);
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
