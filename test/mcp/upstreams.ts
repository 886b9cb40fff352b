// Real MCP servers from npm as upstreams for the gateway tests: server-everything's own
// server (its createServer) served over Streamable HTTP and over the legacy HTTP+SSE
// transport on port 0, and the stdio servers' entry points (memory, filesystem).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
// @ts-expect-error: the package ships JavaScript without types
import { createServer as createEverything } from '@modelcontextprotocol/server-everything/dist/server/index.js';

interface EverythingInstance {
  server: { connect(transport: unknown): Promise<void>; close(): Promise<void> };
  cleanup?: (sessionId?: string) => void;
}

export interface EverythingUpstream {
  /** Streamable HTTP endpoint. */
  readonly url: string;
  /** Legacy SSE endpoint. */
  readonly sseUrl: string;
  /** Streamable-HTTP sessions alive (ending one simulates an upstream that expired it). */
  readonly sessions: Map<string, StreamableHTTPServerTransport>;
  /** Authorization headers the upstream saw, in order. */
  readonly authorizations: Array<string | undefined>;
  /** POST requests the upstream received (calls; GET streams and DELETEs not counted). */
  posts(): number;
  close(): Promise<void>;
}

export async function startEverything(): Promise<EverythingUpstream> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  const instances: EverythingInstance[] = [];
  const authorizations: Array<string | undefined> = [];
  let posts = 0;
  const newInstance = (): EverythingInstance => {
    const instance = createEverything() as EverythingInstance;
    instances.push(instance);
    return instance;
  };
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    authorizations.push(request.headers.authorization);
    if (request.method === 'POST') posts++;
    const url = new URL(request.url ?? '/', 'http://x');
    if (url.pathname === '/mcp') {
      const id = request.headers['mcp-session-id'];
      if (typeof id === 'string') {
        const transport = sessions.get(id);
        if (transport === undefined) {
          response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
          return;
        }
        await transport.handleRequest(request, response);
        return;
      }
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, transport);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await newInstance().server.connect(transport);
      await transport.handleRequest(request, response);
      return;
    }
    if (url.pathname === '/sse' && request.method === 'GET') {
      const transport = new SSEServerTransport('/message', response);
      sse.set(transport.sessionId, transport);
      response.once('close', () => sse.delete(transport.sessionId));
      await newInstance().server.connect(transport);
      return;
    }
    if (url.pathname === '/message' && request.method === 'POST') {
      const transport = sse.get(url.searchParams.get('sessionId') ?? '');
      if (transport === undefined) {
        response.writeHead(404).end();
        return;
      }
      await transport.handlePostMessage(request, response);
      return;
    }
    response.writeHead(404).end();
  };
  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  const origin = await listen(server);
  return {
    url: `${origin}/mcp`,
    sseUrl: `${origin}/sse`,
    sessions,
    authorizations,
    posts: () => posts,
    async close() {
      for (const transport of sessions.values()) await transport.close().catch(() => undefined);
      for (const transport of sse.values()) await transport.close().catch(() => undefined);
      for (const instance of instances) {
        instance.cleanup?.();
        await instance.server.close().catch(() => undefined);
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening');
  return `http://127.0.0.1:${address.port}`;
}

const require = createRequire(import.meta.url);

/** The entry point of a stdio server package (run with this process's node). */
export function stdioEntry(pkg: '@modelcontextprotocol/server-memory' | '@modelcontextprotocol/server-filesystem'): string {
  return join(dirname(require.resolve(`${pkg}/package.json`)), 'dist', 'index.js');
}

/** The official SDK client on the gateway's MCP endpoint (a given session id is reused without initialize). */
export async function connect(origin: string, key: string, path = '/mcp', sessionId?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${origin}${path}`), { requestInit: { headers: { 'x-gateway-api-key': key } }, sessionId });
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(transport);
  return { client, transport };
}

