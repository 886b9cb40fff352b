// The MCP gateway with real parts: the official SDK client through /mcp to real npm servers
// (server-everything over Streamable HTTP and legacy SSE, server-memory and
// server-filesystem over stdio), merged with prefixed names; one server down removes only
// its tools; per-caller authorization on list and call; accounting.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { connect, startEverything, stdioEntry, type EverythingUpstream } from './upstreams.ts';

const LIMITED_KEY = 'gw-mcp-limited-key-0123456789abcdef';
const OUTSIDER_KEY = 'gw-mcp-outsider-key-0123456789abcdef';
const SECRET = 'mcp-test-secret-key-0123456789abcdef0123';

let everything: EverythingUpstream;
let harness: Harness;
let dir: string;
const records: RequestRecord[] = [];

function mcpState(upstream: EverythingUpstream, dataDir: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return baseState({
    apiKeys: [
      { id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] },
      { id: 'limited', key: LIMITED_KEY, workspace: 'team-b' },
      { id: 'outsider', key: OUTSIDER_KEY, workspace: 'team-c' },
    ],
    mcpServers: [
      {
        name: 'everything',
        url: upstream.url,
        headers: { authorization: 'Bearer upstream-secret-token' },
        tools: { exclude: ['trigger-long-running-operation'], rename: { 'get-sum': 'add' } },
        access: [{ keys: ['test'] }, { workspaces: ['team-b'], tools: ['echo'] }],
      },
      { name: 'legacy', transport: 'sse', url: upstream.sseUrl, tools: { include: ['echo'] }, access: [{ keys: ['test'] }] },
      { name: 'memory', transport: 'stdio', command: process.execPath, args: [stdioEntry('@modelcontextprotocol/server-memory')], env: { MEMORY_FILE_PATH: join(dataDir, 'memory.jsonl') }, access: [{ keys: ['test'] }] },
      { name: 'files', transport: 'stdio', command: process.execPath, args: [stdioEntry('@modelcontextprotocol/server-filesystem'), dataDir], access: [{ keys: ['test'] }] },
      { name: 'down', url: 'http://127.0.0.1:9/mcp', timeoutMs: 2000 },
    ],
    ...extra,
  });
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((part) => part.text ?? '').join('');
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-mcp-'));
  await writeFile(join(dir, 'hello.txt'), 'hello from the filesystem server');
  everything = await startEverything();
  harness = await startHarness({ state: mcpState(everything, dir), env: { AIGATEWAY_SECRET_KEY: SECRET }, requestSink: (record) => records.push(record) });
});

after(async () => {
  await harness?.close();
  await everything?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('MCP gateway: one endpoint, many servers', () => {
  test('tools from every transport are merged with <server>__ prefixes; the down server only loses its own', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(names.includes('everything__echo'), names.join(','));
      assert.ok(names.includes('everything__add'), 'get-sum renamed to add');
      assert.ok(!names.includes('everything__get-sum'), 'the old name is gone');
      assert.ok(!names.includes('everything__trigger-long-running-operation'), 'excluded');
      assert.ok(names.includes('legacy__echo'), 'the SSE server');
      assert.deepEqual(names.filter((name) => name.startsWith('legacy__')), ['legacy__echo'], 'include keeps only echo');
      assert.ok(names.includes('memory__create_entities'), 'the stdio memory server');
      assert.ok(names.includes('files__read_text_file') || names.includes('files__read_file'), 'the stdio filesystem server');
      assert.ok(!names.some((name) => name.startsWith('down__')));

      assert.equal(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'hi' } })), 'Echo: hi');
      assert.match(textOf(await client.callTool({ name: 'everything__add', arguments: { a: 2, b: 3 } })), /5/);
      assert.equal(textOf(await client.callTool({ name: 'legacy__echo', arguments: { message: 'sse' } })), 'Echo: sse');
      await client.callTool({ name: 'memory__create_entities', arguments: { entities: [{ name: 'gw', entityType: 'thing', observations: ['x'] }] } });
      assert.match(textOf(await client.callTool({ name: 'memory__read_graph', arguments: {} })), /"gw"/);
      const file = names.includes('files__read_text_file') ? 'files__read_text_file' : 'files__read_file';
      assert.match(textOf(await client.callTool({ name: file, arguments: { path: join(dir, 'hello.txt') } })), /hello from the filesystem server/);

      await assert.rejects(
        client.callTool({ name: 'down__anything', arguments: {} }),
        (error: unknown) => error instanceof McpError && error.code === -32050 && /MCP server "down" is unavailable/.test(error.message),
        'a call to the down server is a clear JSON-RPC error',
      );
      await assert.rejects(client.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 2 } }), /Unknown tool/, 'a renamed tool answers only to its new name');

      const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
      assert.ok(prompts.some((name) => name.startsWith('everything__')), prompts.join(','));
      const resources = (await client.listResources()).resources;
      assert.ok(resources.length > 0 && resources.every((resource) => resource.uri.includes('+')), 'resource URIs carry the server prefix');
      const first = resources.find((resource) => resource.uri.startsWith('everything+'));
      assert.ok(first !== undefined);
      const read = await client.readResource({ uri: first.uri });
      assert.equal(read.contents[0]?.uri, first.uri, 'contents come back under the prefixed URI');
    } finally {
      await client.close();
    }
  });

  test('/mcp/{server} speaks the server\'s own names', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY, '/mcp/everything');
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(names.includes('echo') && names.includes('add'));
      assert.ok(!names.some((name) => name.includes('__')));
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'one' } })), 'Echo: one');
    } finally {
      await client.close();
    }
  });

  test('upstream credentials reach only their server; the client\'s key is never forwarded', async () => {
    const seen = everything.authorizations.filter((value) => value !== undefined);
    assert.ok(seen.length > 0);
    assert.ok(seen.every((value) => value === 'Bearer upstream-secret-token'), seen.join(','));
    assert.ok(!everything.authorizations.some((value) => value?.includes(TEST_GATEWAY_KEY)));
  });
});

describe('MCP gateway: authorization on list and call', () => {
  test('a caller sees only the tools it may call, and a call outside them is refused', async () => {
    const { client } = await connect(harness.gateway.origin, LIMITED_KEY);
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
      assert.deepEqual(names, ['everything__echo'], 'team-b may use echo only (and the down server, which has no tools)');
      assert.equal(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'ok' } })), 'Echo: ok');
      for (const name of ['everything__add', 'memory__read_graph', 'legacy__echo']) {
        await assert.rejects(client.callTool({ name, arguments: { a: 1, b: 2 } }), (error: unknown) => error instanceof McpError && error.code === -32602, name);
      }
    } finally {
      await client.close();
    }
  });

  test('a server the caller may not use is unknown on /mcp/{server}', async () => {
    const response = await fetch(`${harness.gateway.origin}/mcp/memory`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': OUTSIDER_KEY, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    assert.equal(response.status, 404);
  });

  test('without a key /mcp is 401; a session id is bound to the caller that opened it', async () => {
    const bare = await fetch(`${harness.gateway.origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(bare.status, 401);
    const { client, transport } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    const sessionId = transport.sessionId;
    assert.ok(sessionId !== undefined);
    await client.close();
    const stolen = await fetch(`${harness.gateway.origin}/mcp`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': LIMITED_KEY, 'mcp-session-id': sessionId, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    assert.equal(stolen.status, 404, 'another key cannot use the session');
  });
});

describe('MCP gateway: accounting', () => {
  test('each JSON-RPC call is one request-log record with server, tool, caller, status, duration and sizes', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    try {
      await client.callTool({ name: 'everything__echo', arguments: { message: 'accounted' } });
      await assert.rejects(client.callTool({ name: 'nope__x', arguments: {} }), /Unknown tool/);
    } finally {
      await client.close();
    }
    const ok = records.find((record) => record.metadata?.['mcp_method'] === 'tools/call' && record.model === 'echo' && record.status === 200);
    assert.ok(ok !== undefined, 'a record for the call');
    assert.equal(ok.provider, 'mcp:everything');
    assert.equal(ok.apiKeyId, 'test');
    assert.equal(ok.route, '/mcp');
    assert.ok(ok.latencyMs >= 0);
    assert.ok((ok.metadata?.['mcp_request_bytes'] as number) > 0 && (ok.metadata?.['mcp_response_bytes'] as number) > 0);
    const refused = records.find((record) => record.model === 'nope__x');
    assert.ok(refused !== undefined && refused.status === 400, 'the refused call is recorded too');
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(metrics, /aigateway_mcp_requests_total\{server="everything",method="tools\/call",outcome="ok"\} [1-9]/);
  });
});
