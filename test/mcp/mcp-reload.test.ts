// list_changed passes through (an upstream that adds a tool tells the client through the
// gateway's GET stream), and a state reload changes what /mcp serves without a restart.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { connect, listen } from './upstreams.ts';

let upstream: Server;
let url: string;
let harness: Harness;
const transports = new Map<string, StreamableHTTPServerTransport>();

/** An upstream whose `grow` tool registers another tool (the SDK then sends tools/list_changed). */
function growingServer(): McpServer {
  const server = new McpServer({ name: 'growing', version: '1' });
  let grown = 0;
  server.registerTool('grow', { description: 'adds a tool' }, async () => {
    grown++;
    server.registerTool(`grown-${grown}`, { description: 'grown' }, async () => ({ content: [{ type: 'text', text: 'ok' }] }));
    return { content: [{ type: 'text', text: `grown-${grown}` }] };
  });
  return server;
}

before(async () => {
  upstream = createServer((request, response) => {
    const id = request.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? transports.get(id) : undefined;
    if (existing !== undefined) {
      void existing.handleRequest(request, response);
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sessionId) => {
      transports.set(sessionId, transport);
    } });
    void growingServer().connect(transport).then(() => transport.handleRequest(request, response));
  });
  url = `${await listen(upstream)}/mcp`;
  harness = await startHarness({ state: baseState({ mcpServers: [{ name: 'growing', url }] }) });
});

after(async () => {
  await harness?.close();
  for (const transport of transports.values()) await transport.close();
  upstream?.closeAllConnections();
  upstream?.close();
});

describe('MCP notifications and reload', () => {
  test('tools/list_changed from an upstream reaches the client', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed++;
    });
    try {
      // The gateway opens the upstream's stream when the client opens its own; grow until one arrives.
      await eventually(async () => {
        await client.callTool({ name: 'growing__grow', arguments: {} });
        return changed > 0;
      }, 'a tools/list_changed notification', { timeoutMs: 10_000, intervalMs: 50 });
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(names.includes('growing__grown-1'), names.join(','));
    } finally {
      await client.close();
    }
  });

  test('a reload that renames and restricts tools is served by the next request', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    try {
      assert.ok((await client.listTools()).tools.some((tool) => tool.name === 'growing__grow'));
      await harness.writeState(baseState({ mcpServers: [{ name: 'growing', url, tools: { rename: { grow: 'expand' } } }] }));
      await eventually(async () => (await client.listTools()).tools.some((tool) => tool.name === 'growing__expand'), 'the renamed tool', { timeoutMs: 10_000 });
      await harness.writeState(baseState({ mcpServers: [{ name: 'growing', url, access: [{ keys: ['nobody'] }] }] }));
      await eventually(async () => (await client.listTools()).tools.length === 0, 'no tools for this key', { timeoutMs: 10_000 });
      await assert.rejects(client.callTool({ name: 'growing__grow', arguments: {} }), /Unknown tool/);
    } finally {
      await client.close();
    }
  });
});
