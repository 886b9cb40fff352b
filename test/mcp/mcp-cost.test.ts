// Cost per tool call: a price per server (perCall) and per tool, recorded in the request
// log's cost and in aigateway_cost_usd_total, and charged to cost usage-limit policies; a
// call the budget cannot cover is refused with a JSON-RPC error naming the policy, and an
// unpriced tool is never charged.
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
    state: baseState({
      mcpServers: [
        { name: 'priced', url: everything.url, price: { perCall: 0.01, tools: { 'get-sum': 0.05, 'get-tiny-image': 0 } } },
        { name: 'free', url: everything.url },
      ],
      // $0.025 for the priced server's calls: two echoes fit, a third does not.
      usageLimitPolicies: [
        { id: 'mcp-tools-budget', workspace_id: 'default', type: 'cost', credit_limit: 0.025, conditions: [{ key: 'mcp_server', value: 'priced' }], group_by: [{ key: 'api_key' }] },
      ],
    }),
    requestSink: (record) => records.push(record),
  });
});

after(async () => {
  await harness?.close();
  await everything?.close();
});

describe('MCP cost per tool call', () => {
  test('priced calls are recorded and charged; past the budget a call is refused naming the policy', async () => {
    const { client } = await connect(harness.gateway.origin, TEST_GATEWAY_KEY);
    try {
      await client.callTool({ name: 'priced__echo', arguments: { message: 'one' } });
      await client.callTool({ name: 'priced__echo', arguments: { message: 'two' } });
      await assert.rejects(
        client.callTool({ name: 'priced__echo', arguments: { message: 'three' } }),
        (error: unknown) => error instanceof McpError && error.code === -32028 && /mcp-tools-budget/.test(error.message),
      );
      await assert.rejects(client.callTool({ name: 'priced__get-sum', arguments: { a: 1, b: 2 } }), (error: unknown) => error instanceof McpError && error.code === -32028);
      // The free server and a tool priced at 0 go on.
      const free = await client.callTool({ name: 'free__echo', arguments: { message: 'free' } });
      assert.match(JSON.stringify(free.content), /Echo: free/);
    } finally {
      await client.close();
    }
    const calls = records.filter((record) => record.metadata?.['mcp_method'] === 'tools/call');
    const echoes = calls.filter((record) => record.provider === 'mcp:priced' && record.model === 'echo');
    assert.deepEqual(
      echoes.map((record) => [record.status, record.costUsd]),
      [
        [200, 0.01],
        [200, 0.01],
        [429, undefined],
      ],
    );
    assert.equal(echoes[2]?.errorCode, 'AIGW_ERR_BUDGET_EXCEEDED');
    assert.equal(calls.find((record) => record.provider === 'mcp:free')?.costUsd, undefined, 'an unpriced server is not charged');
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(metrics, /aigateway_cost_usd_total\{provider="mcp:priced",model="echo"\} 0\.02/);
  });
});
