import { Readable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CallContext } from './mcp-calls.ts';
import { RpcError } from './mcp-errors.ts';
import { runMethod, type MethodHost } from './mcp-methods.ts';

// The gateway as the official SDK's Server over its web-standard Streamable HTTP transport,
// one pair per HTTP request, for what the direct path (mcp-direct.ts) leaves to it:
// initialize, batches, notifications, ping, logging/setLevel and the SDK's own answers
// (unknown methods, protocol-version checks). Answers stream as SSE.

const NO_SCHEMA_VALIDATOR = {
  getValidator: () => (input: unknown) => ({ valid: true as const, data: input as never, errorMessage: undefined }),
};

/** The capabilities the gateway declares (initialize, server/discover). */
export const GATEWAY_CAPABILITIES = { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, logging: {} } as const;
export const GATEWAY_INFO = { name: 'aigateway', version: '1' } as const;

const REGISTERED = [
  ListToolsRequestSchema,
  CallToolRequestSchema,
  ListPromptsRequestSchema,
  GetPromptRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
] as const;

function serverFor(host: MethodHost, context: CallContext): Server {
  // logging: setLevel is accepted (the SDK answers it) though upstream log messages are not relayed.
  const server = new Server(GATEWAY_INFO, { capabilities: GATEWAY_CAPABILITIES, jsonSchemaValidator: NO_SCHEMA_VALIDATOR });
  for (const schema of REGISTERED) {
    server.setRequestHandler(schema as typeof ListToolsRequestSchema, (request, extra) => runMethod(host, context, request.method, request.params, extra.signal, true) as never);
  }
  invalidParamsAsRpcErrors(server);
  return server;
}

/** Answers one POST with a fresh SDK server and transport (the session id is the gateway's). */
export async function answerWithSdkServer(host: MethodHost, context: CallContext, request: FastifyRequest, reply: FastifyReply, body: unknown, sessionId: string | undefined): Promise<FastifyReply> {
  const server = serverFor(host, context);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  const close = (): void => void server.close().catch(() => undefined);
  let response: Response;
  try {
    const webRequest = new Request(`http://gateway${request.url}`, { method: 'POST', headers: webHeaders(request) });
    response = await transport.handleRequest(webRequest, { parsedBody: body });
  } catch (error) {
    close();
    throw error;
  }
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection') void reply.header(name, value);
  });
  if (sessionId !== undefined) reply.header('mcp-session-id', sessionId);
  if (response.body === null || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = response.body === null ? '' : await response.text();
    close();
    return reply.send(text);
  }
  const stream = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
  // A client that leaves aborts the upstream calls still running (the server's close aborts its handlers).
  stream.once('close', close);
  reply.raw.once('close', () => stream.destroy());
  return reply.send(stream);
}

/**
 * The SDK parses a request's params with zod before the handler runs and answers a
 * failure as an internal error (-32603); params that do not fit the method are the
 * caller's mistake: -32602.
 */
function invalidParamsAsRpcErrors(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers?: Map<string, (request: unknown, extra: unknown) => Promise<unknown>> })._requestHandlers;
  if (!(handlers instanceof Map)) return;
  for (const [method, handler] of handlers) {
    handlers.set(method, async (request, extra) => {
      try {
        return await handler(request, extra);
      } catch (error) {
        if (Array.isArray((error as { issues?: unknown })?.issues)) throw new RpcError(ErrorCode.InvalidParams, `Invalid params for ${method}.`);
        throw error;
      }
    });
  }
}

/** The headers the SDK transport reads (accept, content type, protocol version). */
function webHeaders(request: FastifyRequest): Headers {
  const headers = new Headers();
  for (const name of ['accept', 'content-type', 'mcp-protocol-version']) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  return headers;
}
