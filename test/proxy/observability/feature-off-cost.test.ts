// A feature that is off costs nothing per request: with no MCP server, no WebSocket session,
// no usage-limit policy, the console off and no body capture (--log-bodies), chat completions
// call no function of proxy/mcp/, proxy/websocket/, proxy/console/ or proxy/logs/exchange-*,
// and of proxy/budgets/ only the one sync check that finds no policy (no promise, no hook).
// Counted with V8's precise coverage (every call, not samples); a new per-request call into a
// feature that is off fails here.
import assert from 'node:assert/strict';
import { Session } from 'node:inspector/promises';
import { test } from 'node:test';
import { startMockOpenAI } from '../../fixtures/mock-openai.ts';
import { baseState, startHarness } from '../../helpers/gateway-harness.ts';

interface Coverage {
  result: Array<{ url: string; functions: Array<{ functionName: string; ranges: Array<{ count: number }> }> }>;
}

const FEATURE = /\/proxy\/(mcp|websocket|console|budgets|logs\/exchange-)/;
const REQUESTS = 40;

test('MCP, WebSocket, budgets, the console and body capture cost no call per request when they are off', async () => {
  const mock = await startMockOpenAI({ apiKey: 'sk-off' });
  const harness = await startHarness({ state: baseState({ providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-off', customHost: mock.url }] }) });
  const session = new Session();
  session.connect();
  try {
    const client = harness.client({ 'x-gateway-config': JSON.stringify({ provider: '@mock' }) });
    const ask = () => client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    await ask(); // first request: lazy loads happen here, not in the count
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await session.post('Profiler.takePreciseCoverage'); // resets the counters
    for (let i = 0; i < REQUESTS; i++) await ask();
    const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as Coverage;
    await session.post('Profiler.stopPreciseCoverage');
    const calls = new Map<string, number>();
    for (const script of result) {
      const feature = FEATURE.exec(script.url)?.[1];
      if (feature === undefined) continue;
      for (const fn of script.functions) {
        const count = fn.ranges[0]?.count ?? 0;
        if (count === 0 || fn.functionName === '') continue;
        const key = `${feature}: ${fn.functionName}`;
        calls.set(key, (calls.get(key) ?? 0) + count);
      }
    }
    const perRequest = [...calls].filter(([, count]) => count >= REQUESTS).map(([name, count]) => `${name} ×${count / REQUESTS}`);
    // With budgets off, one sync check runs per request: budgetAdmission reads the snapshot's
    // policy list and the API store's (its snapshot(), a field read) and returns undefined —
    // no promise, no await, no onSend hook, no settlement call.
    assert.deepEqual(perRequest.sort(), ['budgets: budgetAdmission ×1', 'budgets: snapshot ×1']);
  } finally {
    session.disconnect();
    await harness.close();
    await mock.close();
  }
});
