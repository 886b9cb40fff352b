// Hostile input on /mcp: malformed JSON-RPC, oversized messages, batch floods, unknown
// methods and tools, forged session ids, and upstreams that send an endless stream or
// never answer. Each gets a JSON-RPC error or a bounded refusal; the gateway stays up.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { listen } from './upstreams.ts';

let harness: Harness;
let hostile: Server;
let sessionId: string;

const HEADERS = { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

/** An upstream that initializes properly, then streams without end or never answers. */
function hostileUpstream(): Server {
  return createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const message = text === '' ? {} : (JSON.parse(text) as { id?: number; method?: string; params?: { name?: string } });
      if (message.method === 'initialize') {
        response.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'hostile-session' });
        response.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } } }));
        return;
      }
      if (message.id === undefined) {
        response.writeHead(202).end();
        return;
      }
      if (message.method === 'tools/list') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'flood', inputSchema: { type: 'object' } }, { name: 'silent', inputSchema: { type: 'object' } }] } }));
        return;
      }
      if (message.params?.name === 'silent') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.flushHeaders();
        return; // never answers
      }
      // An endless stream of notifications that never carries the answer.
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const line = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(8192) } })}\n\n`;
      const pump = (): void => {
        while (!response.destroyed && response.write(line)) {
          // keep writing until the socket pushes back
        }
        if (!response.destroyed) response.once('drain', pump);
      };
      pump();
    });
  });
}

async function post(body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: { error?: { code: number; message: string }; result?: unknown } | undefined }> {
  const response = await fetch(`${harness.gateway.origin}/mcp`, { method: 'POST', headers: { ...HEADERS, ...headers }, body });
  const raw = await response.text();
  // Answers come as JSON or as an SSE stream of one message.
  const text = (response.headers.get('content-type') ?? '').includes('text/event-stream') ? (/^data: (.*)$/m.exec(raw)?.[1] ?? '') : raw;
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json };
}

before(async () => {
  hostile = hostileUpstream();
  const origin = await listen(hostile);
  harness = await startHarness({
    state: baseState({
      mcpServers: [{ name: 'hostile', url: `${origin}/mcp`, timeoutMs: 500 }],
      mcp: { maxMessageBytes: 4096, maxUpstreamBytes: 65_536, maxBatch: 4 },
    }),
  });
  const init = await fetch(`${harness.gateway.origin}/mcp`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  assert.equal(init.status, 200);
  sessionId = init.headers.get('mcp-session-id') ?? '';
  assert.ok(sessionId !== '');
});

after(async () => {
  await harness?.close();
  hostile?.closeAllConnections();
  hostile?.close();
});

describe('MCP hostile input', () => {
  test('malformed JSON is a JSON-RPC parse error', async () => {
    const answer = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(answer.status, 400);
    assert.equal(answer.json?.error?.code, -32700);
  });

  test('a message that is not JSON-RPC is refused', async () => {
    const answer = await post(JSON.stringify({ hello: 'world' }), { 'mcp-session-id': sessionId });
    assert.equal(answer.status, 400);
    assert.ok(answer.json?.error !== undefined);
  });

  test('an oversized message is a bounded 413', async () => {
    const answer = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(10_000) } }), { 'mcp-session-id': sessionId });
    assert.equal(answer.status, 413);
  });

  test('a batch flood and an empty batch are refused', async () => {
    const flood = JSON.stringify(Array.from({ length: 50 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'ping' })));
    const answer = await post(flood, { 'mcp-session-id': sessionId });
    assert.equal(answer.status, 400);
    assert.equal(answer.json?.error?.code, -32600);
    const empty = await post('[]', { 'mcp-session-id': sessionId });
    assert.equal(empty.json?.error?.code, -32600);
  });

  test('unknown methods, invalid params and unknown tools are JSON-RPC errors', async () => {
    const unknown = await post(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'no/such/method' }), { 'mcp-session-id': sessionId });
    assert.equal(unknown.json?.error?.code, -32601);
    const invalid = await post(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { arguments: 1 } }), { 'mcp-session-id': sessionId });
    assert.equal(invalid.json?.error?.code, -32602);
    const tool = await post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'nobody__nothing' } }), { 'mcp-session-id': sessionId });
    assert.equal(tool.json?.error?.code, -32602);
  });

  test('a forged or missing session id is refused', async () => {
    const forged = await post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list' }), { 'mcp-session-id': 'A'.repeat(200) });
    assert.equal(forged.status, 404);
    const tampered = sessionId.slice(0, -4) + (sessionId.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    assert.equal((await post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }), { 'mcp-session-id': tampered })).status, 404);
    const missing = await post(JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list' }));
    assert.equal(missing.status, 400);
  });

  test('an upstream that streams without end is cut at the byte cap with a JSON-RPC error', async () => {
    const answer = await post(JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'hostile__flood', arguments: {} } }), { 'mcp-session-id': sessionId });
    assert.equal(answer.status, 200);
    assert.ok(answer.json?.error !== undefined, JSON.stringify(answer.json));
    assert.ok([-32052, -32050, -32051].includes(answer.json.error.code), JSON.stringify(answer.json));
  });

  test('an upstream that never answers times out with a JSON-RPC error', async () => {
    const answer = await post(JSON.stringify({ jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'hostile__silent', arguments: {} } }), { 'mcp-session-id': sessionId });
    assert.equal(answer.json?.error?.code, -32051, JSON.stringify(answer.json));
  });

  test('the gateway is still serving', async () => {
    const answer = await post(JSON.stringify({ jsonrpc: '2.0', id: 13, method: 'tools/list' }), { 'mcp-session-id': sessionId });
    assert.deepEqual(
      (answer.json?.result as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name),
      ['hostile__flood', 'hostile__silent'],
    );
    assert.equal((await fetch(`${harness.gateway.origin}/health`)).status, 200);
  });
});
