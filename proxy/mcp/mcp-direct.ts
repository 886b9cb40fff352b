import { ErrorCode, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { takeSerialized } from './mcp-accounting.ts';
import type { CallContext } from './mcp-calls.ts';
import { isObject, RpcError, toMcpError } from './mcp-errors.ts';
import { isGatewayMethod, runMethod, type MethodHost } from './mcp-methods.ts';
import { GATEWAY_CAPABILITIES, GATEWAY_INFO } from './mcp-sdk-server.ts';
import { discoverResult, MODERN_METHODS } from './mcp-stateless.ts';

// The direct path: one JSON-RPC request of a gateway method, answered without building an
// SDK server and transport per request (their Request, Response and web streams cost more
// than the gateway's own work). It takes only what the SDK transport would accept as it is;
// anything else goes to the SDK path (mcp-sdk-server.ts), which answers it as before. A
// session's answer is the one SSE event the SDK transport would send, written as one string;
// a 2026-07-28 answer is one JSON object.

/** A request the direct path serves on a legacy (initialize) session, or undefined. */
export function directRequestOf(request: FastifyRequest, body: unknown): { id: string | number; method: string; params: unknown } | undefined {
  if (!isObject(body) || body['jsonrpc'] !== '2.0') return undefined;
  const id = body['id'];
  const method = body['method'];
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof method !== 'string') return undefined;
  if (!isGatewayMethod(method) && method !== 'server/discover') return undefined;
  const accept = request.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!(request.headers['content-type'] ?? '').includes('application/json')) return undefined;
  const version = request.headers['mcp-protocol-version'];
  if (version !== undefined && (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return undefined;
  return { id, method, params: body['params'] };
}

/** Runs one request and answers it as JSON; a client that leaves cancels the upstream call. */
export async function answerDirect(
  host: MethodHost,
  context: CallContext,
  reply: FastifyReply,
  message: { id: string | number; method: string; params: unknown },
  sessionId: string | undefined,
): Promise<FastifyReply> {
  const aborter = new AbortController();
  const onClose = (): void => {
    if (!reply.raw.writableFinished) aborter.abort();
  };
  reply.raw.once('close', onClose);
  let body: string;
  try {
    const result = await resultOf(host, context, message, aborter.signal);
    const known = context.modern ? undefined : takeSerialized(result);
    body =
      known === undefined
        ? JSON.stringify({ jsonrpc: '2.0', id: message.id, result: context.modern ? { ...(result as object), resultType: 'complete' } : result })
        : `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${known}}`;
  } catch (error) {
    const failure = toMcpError(error);
    body = JSON.stringify({ jsonrpc: '2.0', id: message.id, error: failure.data === undefined ? { code: failure.code, message: failure.message } : { code: failure.code, message: failure.message, data: failure.data } });
  }
  if (context.modern) return reply.code(200).header('content-type', 'application/json').send(body);
  if (sessionId !== undefined) reply.header('mcp-session-id', sessionId);
  return reply.code(200).header('content-type', 'text/event-stream').header('cache-control', 'no-cache').send(`event: message\ndata: ${body}\n\n`);
}

function resultOf(host: MethodHost, context: CallContext, message: { method: string; params: unknown }, signal: AbortSignal): Promise<unknown> {
  if (message.method === 'server/discover') return Promise.resolve(discoverResult(context.modern, GATEWAY_CAPABILITIES, GATEWAY_INFO));
  if (context.modern && !MODERN_METHODS.has(message.method)) return Promise.reject(new RpcError(ErrorCode.MethodNotFound, 'Method not found'));
  return runMethod(host, context, message.method, context.modern ? withoutModernMeta(message.params) : message.params, signal, false);
}

/** The revision's own `_meta` keys stay here: the upstream speaks the revision the gateway agreed with it. */
function withoutModernMeta(params: unknown): unknown {
  if (!isObject(params) || !isObject(params['_meta'])) return params;
  const meta = Object.fromEntries(Object.entries(params['_meta']).filter(([key]) => !key.startsWith('io.modelcontextprotocol/')));
  const { _meta: _dropped, ...rest } = params;
  return Object.keys(meta).length === 0 ? rest : { ...rest, _meta: meta };
}
