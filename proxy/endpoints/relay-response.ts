import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import type { RequestContext } from '../request-context.ts';

// Upstream answer → client. Success bodies are relayed as a stream, byte for byte, so
// streaming (SSE) passes chunk by chunk and a plain JSON answer is never re-serialised.
// Error bodies are read (bounded) and normalised to the OpenAI shape, status kept.

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

export async function relayResponse(
  reply: FastifyReply,
  upstream: Dispatcher.ResponseData,
  target: ResolvedTarget,
  context: RequestContext,
): Promise<FastifyReply> {
  const status = upstream.statusCode;
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value !== undefined && !DROPPED_HEADERS.has(name)) reply.header(name, value);
  }
  reply.code(status);
  if (status >= 200 && status < 300) return reply.send(upstream.body);

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
