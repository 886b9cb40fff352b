import type { FastifyReply, FastifyRequest } from 'fastify';
import type { McpCatalog } from './mcp-catalog.ts';
import type { McpGateway } from './mcp-gateway.ts';
import type { McpSession } from './mcp-session.ts';
import type { ClientHeaders } from './mcp-upstream.ts';

// The client's GET stream: the list_changed notifications of the session's upstreams are
// passed through (they carry no names, so nothing is rewritten). Streamable-HTTP upstreams:
// this replica opens each one's own GET stream for the upstream session; pooled upstreams
// (stdio, SSE): their notifications fan out to every open stream of a session using them.
// Anything else an upstream sends on its stream is dropped; a line longer than the cap
// ends that upstream's stream (never an unbounded buffer).

const PASSED = new Set(['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed']);
const MAX_LINE_CHARS = 1024 * 1024;
const KEEPALIVE_MS = 25_000;

export interface NotificationStreamOptions {
  readonly gateway: McpGateway;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly catalog: McpCatalog;
  readonly session: McpSession;
  readonly clientHeaders: ClientHeaders;
}

export async function openNotificationStream(options: NotificationStreamOptions): Promise<FastifyReply> {
  const { gateway, reply, catalog, session, clientHeaders } = options;
  const abort = new AbortController();
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();
  const send = (method: string): void => {
    if (!PASSED.has(method) || raw.writableEnded) return;
    raw.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method })}\n\n`);
  };
  const unsubscribe = gateway.upstreams.onNotification((server, notification) => {
    if (session.upstreams[server] !== undefined) send(notification.method);
  });
  const keepalive = setInterval(() => raw.write(': keepalive\n\n'), KEEPALIVE_MS);
  keepalive.unref();
  raw.once('close', () => {
    clearInterval(keepalive);
    unsubscribe();
    abort.abort();
  });
  for (const [name, upstream] of Object.entries(session.upstreams)) {
    const server = catalog.servers.get(name);
    if (server === undefined || server.entry.transport !== 'streamable-http') continue;
    void gateway.upstreams
      .openNotificationStream(server, upstream, clientHeaders, abort.signal)
      .then(async (response) => {
        if (response?.body == null) return;
        await relayLines(response.body, send);
      })
      .catch(() => undefined);
  }
  return reply;
}

async function relayLines(body: ReadableStream<Uint8Array>, send: (method: string) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffered += decoder.decode(value, { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline).replace(/\r$/, '');
      buffered = buffered.slice(newline + 1);
      if (line.startsWith('data:')) {
        try {
          const message = JSON.parse(line.slice(5).trim()) as { method?: unknown };
          if (typeof message.method === 'string') send(message.method);
        } catch {
          // Not JSON: nothing to pass on.
        }
      }
      newline = buffered.indexOf('\n');
    }
    if (buffered.length > MAX_LINE_CHARS) {
      await reader.cancel().catch(() => undefined);
      return;
    }
  }
}
