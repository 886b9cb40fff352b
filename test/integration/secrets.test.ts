// No secret ever leaves through logs, error bodies, metrics or hook_results: scripted
// traffic carries recognisable fake secrets, then every output is scanned for them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { startHarness, type Harness } from '../helpers/gateway-harness.ts';

const GATEWAY_KEY = 'gw-SECRETgatewaykey-0001-0123456';
const SAVED_PROVIDER_KEY = 'sk-SECRETsavedprovider-0002';
const BEARER = 'sk-SECRETbearer-0003';
const CONFIG_KEY = 'sk-SECRETinlineconfig-0004';
const AWS_SECRET = 'SECRETawssecretaccesskey0005';
const PRIVATE_KEY = 'SECRETprivatekeymaterial0006';
const WEBHOOK_TOKEN = 'SECRETwebhooktoken0007';
const SECRETS = [GATEWAY_KEY, SAVED_PROVIDER_KEY, BEARER, CONFIG_KEY, AWS_SECRET, PRIVATE_KEY, WEBHOOK_TOKEN];

let mock: MockOpenAI;
let harness: Harness;
const outputs: string[] = [];

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({
    state: {
      apiKeys: [{ id: 'k', key: GATEWAY_KEY, scopes: ['inference', 'admin'] }],
      providers: [{ slug: 'saved', provider: 'openai', apiKey: SAVED_PROVIDER_KEY, customHost: mock.url }],
      egress: { allow: ['127.0.0.0/8'], clientAllow: ['127.0.0.0/8'] },
    },
  });
});
after(async () => {
  await harness.close();
  await mock.close();
});

async function send(headers: Record<string, string>, body: unknown = { model: 'm', messages: [{ role: 'user', content: 'hi' }] }): Promise<void> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, ...headers },
    body: JSON.stringify(body),
  });
  outputs.push(JSON.stringify([...response.headers]), await response.text());
}

describe('secrets stay secret', () => {
  test('scripted traffic with fake secrets, then every output is scanned', async () => {
    await send({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url, authorization: `Bearer ${BEARER}` });
    // A provider that quotes the refused key in its error.
    mock.enqueue({ status: 401, body: { error: { message: `Incorrect API key provided: ${BEARER}.`, type: 'invalid_request_error', code: 'invalid_api_key' } } });
    await send({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url, authorization: `Bearer ${BEARER}` });
    mock.enqueue({ status: 401, body: { error: { message: `bad key ${SAVED_PROVIDER_KEY}` } } });
    await send({ 'x-gateway-provider': '@saved' });
    await send({ 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: CONFIG_KEY, custom_host: 'http://127.0.0.1:1/v1' }) });
    await send({ 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: CONFIG_KEY, retry: { attempts: 99 } }) });
    await send({
      'x-gateway-config': JSON.stringify({ provider: 'bedrock', cloudC_access_key_id: 'AKIAEXAMPLE', cloudC_secret_access_key: AWS_SECRET, cloudC_region: 'us-east-1', custom_host: 'http://127.0.0.1:1' }),
    });
    await send({
      'x-gateway-config': JSON.stringify({
        provider: 'vertex-ai',
        cloudB_region: 'us-central1',
        cloudB_service_account_json: { type: 'service_account', client_email: 'x@y.iam.gserviceaccount.com', private_key: PRIVATE_KEY, token_uri: 'http://127.0.0.1:1/token' },
      }),
    });
    await send({
      'x-gateway-config': JSON.stringify({
        provider: '@saved',
        before_request_hooks: [{ id: 'remote', checks: [{ id: 'default.webhook', parameters: { webhookURL: 'http://127.0.0.1:1/hook', headers: { authorization: `Bearer ${WEBHOOK_TOKEN}` }, timeout: 200 } }] }],
      }),
    });
    await send({ 'x-gateway-provider': '@saved' }, { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    const logs = await (await fetch(`${harness.gateway.url}/logs`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).text();

    const haystacks: Record<string, string> = { responses: outputs.join('\n'), log: harness.logText(), metrics, logs };
    for (const [where, text] of Object.entries(haystacks)) {
      for (const secret of SECRETS) assert.ok(!text.includes(secret), `${secret} leaked into ${where}`);
    }
    assert.ok(outputs.join('\n').includes('[redacted]'), 'a quoted key was redacted');
  });
});
