// Guardrails on tool traffic: a server's input_guardrails check a call's arguments and its
// output_guardrails the result's text, with the existing checks; a denial is a JSON-RPC
// error and the upstream is not called for denied arguments. Unknown guardrail ids fail closed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { connect, startEverything, type EverythingUpstream } from './upstreams.ts';

let everything: EverythingUpstream;
let harness: Harness;
const records: RequestRecord[] = [];

before(async () => {
  everything = await startEverything();
  harness = await startHarness({
    requestSink: (record) => records.push(record),
    state: baseState({
      guardrails: [
        { id: 'no-secrets', checks: [{ id: 'default.regexMatch', parameters: { rule: 'secret', not: true } }], deny: true },
        { id: 'no-five', checks: [{ id: 'default.regexMatch', parameters: { rule: '\\b5\\b', not: true } }], deny: true },
      ],
      mcpServers: [
        { name: 'everything', url: everything.url, input_guardrails: ['no-secrets'], output_guardrails: ['no-five'] },
        { name: 'broken', url: everything.url, input_guardrails: ['does-not-exist'] },
      ],
    }),
  });
});

after(async () => {
  await harness?.close();
  await everything?.close();
});

describe('MCP guardrails', () => {
  test('arguments and results are checked; a denial is a JSON-RPC error', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    try {
      const fine = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello' } });
      assert.equal((fine.content as Array<{ text: string }>)[0]?.text, 'Echo: hello');
      const upstreamCalls = everything.posts();
      await assert.rejects(
        client.callTool({ name: 'everything__echo', arguments: { message: 'my secret plan' } }),
        (error: unknown) => error instanceof McpError && error.code === -32004 && /no-secrets/.test(error.message),
      );
      assert.equal(everything.posts(), upstreamCalls, 'denied arguments never reach the upstream');
      assert.match(JSON.stringify((await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 2 } })).content), /4/);
      await assert.rejects(client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 3 } }), (error: unknown) => error instanceof McpError && error.code === -32004);
      await assert.rejects(client.callTool({ name: 'broken__echo', arguments: { message: 'x' } }), (error: unknown) => error instanceof McpError && error.code === -32004 && /unknown guardrails/.test(error.message));
    } finally {
      await client.close();
    }
    assert.ok(records.some((record) => record.guardrailVerdict === 'deny' && record.status === 446 && record.model === 'echo'));
  });
});
