// Rate-limit policies that target MCP tool calls: a condition on mcp_tool (or mcp_server)
// counts only those calls; past the limit a call is a JSON-RPC error, other tools go on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { connect, startEverything, type EverythingUpstream } from './upstreams.ts';

let everything: EverythingUpstream;
let harness: Harness;

before(async () => {
  everything = await startEverything();
  harness = await startHarness({
    state: baseState({
      mcpServers: [{ name: 'everything', url: everything.url }],
      rateLimitPolicies: [
        { id: 'echo-per-key', type: 'requests', unit: 'rpm', value: 2, conditions: [{ key: 'mcp_tool', value: 'echo' }], group_by: [{ key: 'api_key' }] },
        // A policy for model calls only: MCP calls never count against it.
        { id: 'models', type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] },
      ],
    }),
  });
});

after(async () => {
  await harness?.close();
  await everything?.close();
});

describe('MCP rate limits', () => {
  test('a policy on mcp_tool limits that tool only', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    try {
      await client.callTool({ name: 'everything__echo', arguments: { message: '1' } });
      await client.callTool({ name: 'everything__echo', arguments: { message: '2' } });
      await assert.rejects(
        client.callTool({ name: 'everything__echo', arguments: { message: '3' } }),
        (error: unknown) => error instanceof McpError && error.code === -32029 && /echo-per-key|rate/i.test(error.message),
      );
      const sum = await client.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 2 } });
      assert.match(JSON.stringify(sum.content), /3/, 'another tool is not limited (nor by the model-call policy)');
    } finally {
      await client.close();
    }
  });
});
