// Sessions that survive replicas: the upstream session map is sealed into Mcp-Session-Id
// (AES-256-GCM under AIGATEWAY_SECRET_KEY), so a session opened on one gateway continues on
// another that shares the key, and on none that does not. An upstream session that expired
// is re-established transparently; DELETE ends the upstream sessions.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dump } from 'js-yaml';
import { spawnGateway } from '../batches/gateway-process.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { connect, startEverything, stdioEntry, type EverythingUpstream } from './upstreams.ts';

const SECRET = 'shared-mcp-secret-0123456789abcdef0123456789';

let everything: EverythingUpstream;
let first: Harness;
let second: Harness;
let stranger: Harness;
let dir: string;

function state(): Record<string, unknown> {
  return baseState({
    mcpServers: [
      { name: 'everything', url: everything.url },
      { name: 'memory', transport: 'stdio', command: process.execPath, args: [stdioEntry('@modelcontextprotocol/server-memory')], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
    ],
  });
}

function textOf(result: unknown): string {
  return ((result as { content?: Array<{ text?: string }> }).content ?? []).map((part) => part.text ?? '').join('');
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-mcp-sessions-'));
  everything = await startEverything();
  first = await startHarness({ state: state(), env: { AIGATEWAY_SECRET_KEY: SECRET } });
  second = await startHarness({ state: state(), env: { AIGATEWAY_SECRET_KEY: SECRET } });
  stranger = await startHarness({ state: state(), env: { AIGATEWAY_SECRET_KEY: 'another-secret-0123456789abcdef0123456789' } });
});

after(async () => {
  await Promise.all([first?.close(), second?.close(), stranger?.close()]);
  await everything?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('MCP sessions across gateways', () => {
  test('a session opened on one gateway continues on another that shares the key', async () => {
    const opened = await connect(first.gateway.origin, TEST_GATEWAY_KEY);
    const sessionId = opened.transport.sessionId;
    assert.ok(sessionId !== undefined && sessionId.length > 40, 'a sealed session id');
    const upstreamSessions = everything.sessions.size;
    assert.equal(textOf(await opened.client.callTool({ name: 'everything__echo', arguments: { message: 'on first' } })), 'Echo: on first');

    // The SDK client reuses the session id without initializing again.
    const moved = await connect(second.gateway.origin, TEST_GATEWAY_KEY, '/mcp', sessionId);
    assert.equal(textOf(await moved.client.callTool({ name: 'everything__echo', arguments: { message: 'on second' } })), 'Echo: on second');
    const names = (await moved.client.listTools()).tools.map((tool) => tool.name);
    assert.ok(names.includes('everything__echo') && names.includes('memory__read_graph'));
    assert.equal(everything.sessions.size, upstreamSessions, 'the second gateway used the same upstream session');

    const foreign = await fetch(`${stranger.gateway.origin}/mcp`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY, 'mcp-session-id': sessionId, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(foreign.status, 404, 'a gateway with another key cannot open the session');
    const body = (await foreign.json()) as { error: { code: number } };
    assert.equal(body.error.code, -32001);
    await opened.client.close();
    await moved.client.close();
  });

  test('an upstream session that expired is re-established transparently', async () => {
    const { client } = await connect(first.gateway.origin, TEST_GATEWAY_KEY);
    assert.equal(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'before' } })), 'Echo: before');
    // The upstream forgets every session (a restart, an idle timeout).
    for (const transport of [...everything.sessions.values()]) await transport.close();
    assert.equal(everything.sessions.size, 0);
    assert.equal(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'after' } })), 'Echo: after');
    assert.equal(everything.sessions.size, 1, 'one new upstream session');
    await client.close();
  });

  test('DELETE ends the upstream sessions', async () => {
    const { client, transport } = await connect(first.gateway.origin, TEST_GATEWAY_KEY);
    const before = everything.sessions.size;
    await transport.terminateSession();
    assert.equal(everything.sessions.size, before - 1);
    await client.close();
  });

  test('two gateway processes sharing the key: a session survives the one that opened it being killed', { timeout: 120_000 }, async () => {
    const statePath = join(dir, 'processes.yaml');
    await writeFile(statePath, dump(baseState({ mcpServers: [{ name: 'everything', url: everything.url }] })));
    const env = { AIGATEWAY_SECRET_KEY: SECRET };
    const one = await spawnGateway(['--config', statePath, '--data-dir', join(dir, 'one')], env);
    const two = await spawnGateway(['--config', statePath, '--data-dir', join(dir, 'two')], env);
    try {
      const originOf = (url: string): string => url.replace(/\/v1$/, '');
      const opened = await connect(originOf(one.url), TEST_GATEWAY_KEY);
      const sessionId = opened.transport.sessionId;
      assert.equal(textOf(await opened.client.callTool({ name: 'everything__echo', arguments: { message: 'process one' } })), 'Echo: process one');
      await one.crash();
      const moved = await connect(originOf(two.url), TEST_GATEWAY_KEY, '/mcp', sessionId);
      assert.equal(textOf(await moved.client.callTool({ name: 'everything__echo', arguments: { message: 'process two' } })), 'Echo: process two');
      await moved.client.close();
    } finally {
      await one.stop();
      await two.stop();
    }
  });
});
