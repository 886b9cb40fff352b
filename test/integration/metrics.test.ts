// Metric names, labels and values after scripted traffic; bounded label cardinality.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({
    state: baseState({ providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: 'sk-m', customHost: mock.url }] }),
  });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function metrics(): Promise<string> {
  return (await fetch(`${harness.gateway.origin}/metrics`)).text();
}

function seriesCount(text: string, name: string): number {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `)).length;
}

async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<void> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-mock', ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  await response.arrayBuffer();
}

describe('GenAI and gateway metrics', () => {
  test('duration, tokens by type, time to first token and gateway overhead are exported', async () => {
    await chat({});
    await chat({ stream: true, stream_options: { include_usage: true } });
    const text = await metrics();
    const labels = 'gen_ai_operation_name="chat",gen_ai_system="openai",gen_ai_request_model="gpt-4o-mini"';
    assert.match(text, new RegExp(`gen_ai_server_request_duration_seconds_count\\{${labels},error_type=""\\} 2`));
    assert.match(text, new RegExp(`gen_ai_client_token_usage_count\\{${labels},gen_ai_token_type="input"\\} 2`));
    assert.match(text, new RegExp(`gen_ai_client_token_usage_count\\{${labels},gen_ai_token_type="output"\\} 2`));
    assert.match(text, new RegExp(`gen_ai_server_time_to_first_token_seconds_count\\{${labels}\\} 1`));
    assert.match(text, /aigateway_gateway_overhead_seconds_count\{route="\/v1\/chat\/completions"\} 2/);
    assert.match(text, /aigateway_gateway_overhead_seconds_bucket\{le="0.00005",route="\/v1\/chat\/completions"\}/);
    assert.match(text, /gen_ai_server_request_duration_seconds_bucket\{le="300",/);
  });

  test('errors carry error_type', async () => {
    mock.enqueue({ status: 500, body: { error: { message: 'boom' } } });
    await chat({});
    assert.match(await metrics(), /gen_ai_server_request_duration_seconds_count\{[^}]*error_type="500"\} 1/);
  });

  test('label cardinality stays bounded: 1,000 distinct models, inline configs and metadata values', async () => {
    for (let i = 0; i < 1000; i++) {
      await chat(
        { model: `model-${i}` },
        {
          'x-gateway-config': JSON.stringify({ virtual_key: 'vk-mock', request_timeout: 10_000 + i, retry: { attempts: 1 } }),
          'x-gateway-metadata': JSON.stringify({ _user: `user-${i}`, session: `s-${i}` }),
        },
      );
    }
    const text = await metrics();
    assert.ok(seriesCount(text, 'gen_ai_server_request_duration_seconds_count') <= 205, 'models are capped');
    assert.match(text, /gen_ai_request_model="other"/);
    assert.ok(!text.includes('user-'), 'metadata never becomes a label');
    assert.ok(!text.includes('request_timeout'), 'inline configs never become labels');
    assert.ok(seriesCount(text, 'aigateway_requests_total') < 10);
    assert.ok(!text.includes(TEST_GATEWAY_KEY) && !text.includes('sk-m'), 'no secrets in metrics');
  });
});

describe('separate metrics port', () => {
  test('/metrics is served on its own port, without an API key, and no longer on the client-facing port', async () => {
    const separate = await startHarness({ state: baseState(), metricsPort: 0 });
    try {
      const origin = separate.gateway.metricsOrigin;
      assert.ok(origin);
      const response = await fetch(`${origin}/metrics`);
      assert.equal(response.status, 200);
      assert.match(await response.text(), /aigateway_config_info/);
      assert.equal((await fetch(`${origin}/v1/chat/completions`)).status, 404);
      // Metric labels name models, policies and cost: not for the clients' port.
      const client = await fetch(`${separate.gateway.origin}/metrics`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
      assert.equal(client.status, 404);
      assert.equal(((await client.json()) as { error: { code: string } }).error.code, 'AIGW_ERR_NOT_FOUND');
    } finally {
      await separate.close();
    }
  });
});
