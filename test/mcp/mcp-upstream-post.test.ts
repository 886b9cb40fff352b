// A call on a held upstream session (proxy/mcp/mcp-upstream-post.ts): the answer read as
// JSON or as SSE up to the response to our id (notifications, multi-line data and CRLF
// split across chunks included), an expired session (404), the upstream's own JSON-RPC
// error, the byte cap on an endless stream and the timeout on a silent upstream.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Agent } from 'undici';
import type { McpServer } from '../../proxy/mcp/mcp-catalog.ts';
import { postOnSession } from '../../proxy/mcp/mcp-upstream-post.ts';
import { UpstreamFailure } from '../../proxy/mcp/mcp-upstream.ts';
import { listen } from './upstreams.ts';

const agent = new Agent();
let origin: string;
const seen: Array<Record<string, unknown>> = [];

async function bodyOf(request: IncomingMessage): Promise<{ id: string; method: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; method: string };
}

const upstream = createServer((request: IncomingMessage, response: ServerResponse) => {
  void (async () => {
    const message = await bodyOf(request);
    seen.push({ ...message, session: request.headers['mcp-session-id'], version: request.headers['mcp-protocol-version'], auth: request.headers['authorization'] });
    const answer = (result: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
    switch (request.url) {
      case '/sse': {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(`event: message\r\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } })}\r`);
        response.write('\n\r\n: a comment\r\n');
        response.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'someone-else', result: { wrong: true } })}\n\n`);
        const text = answer({ content: [{ type: 'text', text: 'over sse' }] });
        response.end(`data: ${text.slice(0, 10)}\ndata:${text.slice(10)}\n\n`);
        return;
      }
      case '/json':
        response.writeHead(200, { 'content-type': 'application/json' }).end(answer({ content: [{ type: 'text', text: 'as json' }] }));
        return;
      case '/expired':
        response.writeHead(404, { 'content-type': 'application/json' }).end('{}');
        return;
      case '/rpc-error':
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'bad arguments', data: { field: 'x' } } }));
        return;
      case '/endless': {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        const line = `data: ${'x'.repeat(1000)}\n`;
        const pump = (): void => {
          while (response.write(line)) if (response.destroyed) return;
          response.once('drain', pump);
        };
        response.on('close', () => response.removeAllListeners('drain'));
        pump();
        return;
      }
      case '/open': {
        // Answers, then keeps the stream open: the call must not wait for its end.
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(`data: ${answer({ content: [{ type: 'text', text: 'left open' }] })}\n\n`);
        return;
      }
      default:
        // /silent: headers never come
        return;
    }
  })();
});

function server(path: string, extra: Partial<McpServer['entry']> = {}): McpServer {
  return {
    name: 'up',
    entry: { name: 'up', transport: 'streamable-http', url: `${origin}${path}`, args: [], forwardClientToken: false, timeoutMs: 5000, ...extra },
    headers: { Authorization: 'Bearer upstream-token' },
  } as unknown as McpServer;
}

function call(path: string, extra: Partial<McpServer['entry']> = {}, cap = 65_536, signal?: AbortSignal): Promise<unknown> {
  return postOnSession({
    dispatcher: agent,
    server: server(path, extra),
    session: { id: 'upstream-session', version: '2025-11-25' },
    clientHeaders: { authorization: 'Bearer client-token' },
    message: { method: 'tools/call', params: { name: 'echo' } },
    schema: { parse: (value) => value },
    cap,
    signal,
  });
}

const failure = (kind: UpstreamFailure['kind'], code?: number) => (error: unknown) => error instanceof UpstreamFailure && error.kind === kind && (code === undefined || error.rpcCode === code);

before(async () => {
  origin = await listen(upstream);
});

after(async () => {
  upstream.closeAllConnections();
  upstream.close();
  await agent.close();
});

describe('MCP upstream call on a held session', () => {
  test('an SSE answer is read up to our response; notifications, comments and other ids are skipped', async () => {
    assert.deepEqual(await call('/sse'), { content: [{ type: 'text', text: 'over sse' }] });
    const last = seen.at(-1) ?? {};
    assert.equal(last['session'], 'upstream-session');
    assert.equal(last['version'], '2025-11-25');
    assert.equal(last['auth'], 'Bearer upstream-token', "the server's header, not the client's token");
    assert.equal(last['method'], 'tools/call');
  });

  test('a JSON answer, an expired session and the upstream\'s own error', async () => {
    assert.deepEqual(await call('/json'), { content: [{ type: 'text', text: 'as json' }] });
    await assert.rejects(call('/expired'), failure('session_expired'));
    await assert.rejects(call('/rpc-error'), failure('error', -32602));
  });

  test('an endless stream is cut at the byte cap; a silent upstream times out', async () => {
    await assert.rejects(call('/endless', {}, 200_000), failure('too_large'));
    await assert.rejects(call('/silent', { timeoutMs: 300 }), failure('timeout'));
  });

  test('an answer on a stream left open is returned at once; the caller leaving cancels the call', async () => {
    assert.deepEqual(await call('/open'), { content: [{ type: 'text', text: 'left open' }] });
    const cancelled = (error: unknown): boolean => error instanceof UpstreamFailure && error.kind === 'timeout' && error.message === 'The call was cancelled.';
    await assert.rejects(call('/silent', {}, 65_536, AbortSignal.abort()), cancelled);
    const leaving = new AbortController();
    const pending = call('/silent', {}, 65_536, leaving.signal);
    // Once the upstream has the request, the caller leaves.
    const asked = seen.length;
    for (const deadline = Date.now() + 5000; seen.length === asked && Date.now() < deadline; ) await new Promise((resolve) => setImmediate(resolve));
    leaving.abort();
    await assert.rejects(pending, cancelled);
  });
});
