// The 2026-07-28 revision where the gateway speaks it: server/discover, sessionless
// requests carrying their version in _meta and MCP-Protocol-Version, and the Mcp-Method /
// Mcp-Name headers checked against the body (HeaderMismatch -32020 otherwise), on modern
// and legacy requests alike. Also: a legacy session's single tools/call is answered by the
// direct path as the one SSE event the SDK transport would send.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { startEverything, type EverythingUpstream } from './upstreams.ts';

const LIMITED_KEY = 'gw-mcp-stateless-limited-0123456789abcdef';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

let everything: EverythingUpstream;
let harness: Harness;

before(async () => {
  everything = await startEverything();
  harness = await startHarness({
    state: baseState({
      apiKeys: [
        { id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] },
        { id: 'limited', key: LIMITED_KEY },
      ],
      mcpServers: [{ name: 'everything', url: everything.url, access: [{ keys: ['test'] }, { keys: ['limited'], tools: ['echo'] }] }],
    }),
  });
});

after(async () => {
  await harness?.close();
  await everything?.close();
});

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly json: { result?: Record<string, unknown>; error?: { code: number; message: string; data?: Record<string, unknown> } } | undefined;
}

async function post(path: string, body: unknown, headers: Record<string, string>, key = TEST_GATEWAY_KEY): Promise<Answer> {
  const response = await fetch(`${harness.gateway.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-gateway-api-key': key, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const data = (response.headers.get('content-type') ?? '').includes('text/event-stream') ? (/^data: (.*)$/m.exec(text)?.[1] ?? '') : text;
  let json;
  try {
    json = data === '' ? undefined : JSON.parse(data);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, json };
}

/** A modern request with its mirrored headers. */
function modern(method: string, params: Record<string, unknown> = {}, name?: string): { body: unknown; headers: Record<string, string> } {
  return {
    body: { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: META } },
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) },
  };
}

describe('MCP 2026-07-28: stateless requests', () => {
  test('server/discover answers without a session: versions, capabilities, identity', async () => {
    const { body, headers } = modern('server/discover');
    const answer = await post('/mcp', body, headers);
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /application\/json/, 'a stateless answer is one JSON object');
    const result = answer.json?.result ?? {};
    assert.deepEqual((result['supportedVersions'] as string[]).slice(0, 1), ['2026-07-28']);
    assert.ok((result['supportedVersions'] as string[]).includes('2025-11-25'), 'the initialize revisions too');
    assert.equal((result['serverInfo'] as { name: string }).name, 'aigateway');
    assert.ok('tools' in (result['capabilities'] as object));
    assert.equal(result['resultType'], 'complete');
    assert.equal(answer.headers.get('mcp-session-id'), null, 'no session is minted');
  });

  test('tools/list and tools/call need no initialize and no session id', async () => {
    const list = modern('tools/list');
    const tools = await post('/mcp', list.body, list.headers);
    assert.equal(tools.status, 200);
    const names = (tools.json?.result?.['tools'] as Array<{ name: string }>).map((tool) => tool.name);
    assert.ok(names.includes('everything__echo'), names.join(','));
    const call = modern('tools/call', { name: 'everything__echo', arguments: { message: 'stateless' } }, 'everything__echo');
    const answer = await post('/mcp', call.body, call.headers);
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.match(JSON.stringify(answer.json?.result?.['content']), /Echo: stateless/);
    // On /mcp/{server} the names are the server's own; a base64-encoded Mcp-Name is decoded before the check.
    const scoped = modern('tools/call', { name: 'echo', arguments: { message: 'scoped' } }, `=?base64?${Buffer.from('echo').toString('base64')}?=`);
    const again = await post('/mcp/everything', scoped.body, scoped.headers);
    assert.match(JSON.stringify(again.json?.result?.['content']), /Echo: scoped/);
  });

  test('a tool the caller may not call is refused like an unknown one', async () => {
    const call = modern('tools/call', { name: 'everything__get-sum', arguments: { a: 1, b: 2 } }, 'everything__get-sum');
    const answer = await post('/mcp', call.body, call.headers, LIMITED_KEY);
    assert.equal(answer.json?.error?.code, -32602, JSON.stringify(answer.json));
    assert.match(answer.json?.error?.message ?? '', /Unknown tool/);
  });

  test('mirrored headers that are missing or do not match the body are a 400 HeaderMismatch', async () => {
    const call = modern('tools/call', { name: 'everything__echo', arguments: { message: 'x' } }, 'everything__get-sum');
    const mismatch = await post('/mcp', call.body, call.headers);
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.json?.error?.code, -32020);
    const noName = await post('/mcp', call.body, { ...call.headers, 'mcp-name': '' });
    assert.equal(noName.json?.error?.code, -32020);
    const { 'mcp-method': _method, ...withoutMethod } = call.headers;
    const noMethod = await post('/mcp', call.body, withoutMethod);
    assert.equal(noMethod.status, 400);
    assert.equal(noMethod.json?.error?.code, -32020);
    const wrongMethod = await post('/mcp', call.body, { ...call.headers, 'mcp-method': 'tools/list' });
    assert.equal(wrongMethod.json?.error?.code, -32020);
    const versionMismatch = await post('/mcp', { ...(call.body as object), params: { name: 'everything__echo', arguments: {}, _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, { ...call.headers, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(versionMismatch.status, 400);
    assert.equal(versionMismatch.json?.error?.code, -32020);
  });

  test('an unsupported version is a 400 listing the supported ones; an unknown method a 404', async () => {
    const unsupported = await post(
      '/mcp',
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } } },
      { 'mcp-protocol-version': '1900-01-01', 'mcp-method': 'tools/list' },
    );
    assert.equal(unsupported.status, 400);
    assert.equal(unsupported.json?.error?.code, -32022);
    assert.ok((unsupported.json?.error?.data?.['supported'] as string[]).includes('2026-07-28'));
    assert.equal(unsupported.json?.error?.data?.['requested'], '1900-01-01');
    const { body, headers } = modern('subscriptions/listen');
    const unknown = await post('/mcp', body, headers);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json?.error?.code, -32601);
    const batch = await post('/mcp', [body], { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    assert.equal(batch.status, 400, 'a modern request is one message');
    // Refused on the headers alone: the body (here not even JSON) is never parsed.
    const unparsed = await fetch(`${harness.gateway.origin}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
      body: '{"jsonrpc": "2.0", "id": 1, "method": ',
    });
    assert.equal(unparsed.status, 404);
    assert.equal(((await unparsed.json()) as { error: { code: number } }).error.code, -32601);
  });
});

describe('MCP: mirrored headers on initialize sessions, and the direct path', () => {
  test('a legacy session checks the headers it sends; its single tools/call is one SSE event', async () => {
    const init = await post('/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, {});
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id') ?? '';
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'everything__echo', arguments: { message: 'legacy' } } };
    const plain = await post('/mcp', call, headers);
    assert.equal(plain.status, 200);
    assert.match(plain.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.match(JSON.stringify(plain.json?.result), /Echo: legacy/);
    assert.equal(plain.headers.get('mcp-session-id'), session);
    const mirrored = await post('/mcp', call, { ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'everything__echo' });
    assert.match(JSON.stringify(mirrored.json?.result), /Echo: legacy/);
    const mismatch = await post('/mcp', call, { ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'everything__get-sum' });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.json?.error?.code, -32020);
    const discover = await post('/mcp', { jsonrpc: '2.0', id: 3, method: 'server/discover' }, headers);
    assert.ok(((discover.json?.result?.['supportedVersions'] as string[] | undefined) ?? []).includes('2026-07-28'), JSON.stringify(discover.json));
  });
});
