// Finding 4: unique x-gateway-provider names with a custom host grew /metrics without bound
// (over a million lines; scrapes blocked the loop; RSS in GBs). Every label fed by request
// input maps to a bounded set: known values, then `custom`/`other`. This floods every such
// input at once — provider names, models, inline target names, trace ids, metadata — and
// asserts the series count stops growing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({ state: baseState() });
});

after(async () => {
  await harness?.close();
  await mock?.close();
});

let sent = 0;

async function flood(count: number): Promise<void> {
  const one = async (): Promise<void> => {
    const n = sent++;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      'x-gateway-trace-id': `trace-${n}`,
      'x-gateway-metadata': JSON.stringify({ user: `u-${n}`, [`k${n}`]: 'v' }),
    };
    if (n % 2 === 0) {
      Object.assign(headers, { 'x-gateway-provider': `made-up-${n}`, 'x-gateway-custom-host': mock.url, authorization: 'Bearer sk-client-000000000000000000000000' });
    } else {
      headers['x-gateway-config'] = JSON.stringify({
        strategy: { mode: 'fallback' },
        retry: { attempts: 1 },
        targets: [{ name: `target-${n}`, provider: `other-made-up-${n}`, custom_host: mock.url, api_key: 'sk-client-000000000000000000000000' }],
      });
    }
    const response = await fetch(`${harness.gateway.url}/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: `model-${n}`, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    await response.arrayBuffer();
  };
  for (let i = 0; i < count; i += 20) await Promise.all(Array.from({ length: Math.min(20, count - i) }, one));
}

async function seriesLines(): Promise<string[]> {
  const text = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
  // The gateway's own series (the runtime's default metrics gain a series per GC kind seen).
  return text
    .split('\n')
    .filter((line) => (line.startsWith('aigateway_') || line.startsWith('gen_ai_')) && !/^(aigateway_)?process_|nodejs_/.test(line));
}

describe('metric labels from request input are bounded', () => {
  test('a flood of unique providers, models, targets, trace ids and metadata stops adding series', { timeout: 60_000 }, async () => {
    await flood(400);
    const first = await seriesLines();
    await flood(1200);
    const second = await seriesLines();
    const before = new Set(first.map((line) => line.slice(0, line.lastIndexOf(' '))));
    const added = second.map((line) => line.slice(0, line.lastIndexOf(' '))).filter((name) => !before.has(name));
    assert.deepEqual(added, [], `series grew from ${first.length} to ${second.length}`);
    // 200 model names (BoundedLabel's budget) × the GenAI histograms is the ceiling.
    assert.ok(second.length < 20_000, `${second.length} series`);
    const text = second.join('\n');
    assert.ok(!/made-up-|target-\d|trace-\d|u-\d/.test(text), 'no request-chosen name, trace id or metadata value is a label');
    assert.match(text, /provider="custom"/);
    assert.match(text, /gen_ai_request_model="other"/);
  });
});
