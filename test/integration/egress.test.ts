// The SSRF guard end to end: custom hosts on loopback/private/metadata addresses are refused
// unless the egress policy lists them (egress.clientAllow for hosts a request chooses, as
// here; test/security/client-egress.test.ts covers the two lists apart); redirects are never followed.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

let mock: MockOpenAI;
before(async () => {
  mock = await startMockOpenAI();
});
after(async () => mock.close());

const state = (clientAllow?: string[]) => ({
  apiKeys: [{ id: 'test', key: TEST_GATEWAY_KEY }],
  ...(clientAllow === undefined ? {} : { egress: { clientAllow } }),
});

async function chatVia(harness: Harness, customHost: string): Promise<{ status: number; error?: { code: string; message: string; param: string } }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': customHost,
      authorization: 'Bearer sk-x',
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: response.status, ...((await response.json()) as { error?: { code: string; message: string; param: string } }) };
}

describe('egress guard (default policy)', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: state() });
  });
  after(async () => harness.close());

  test('loopback, private and metadata destinations → 400 naming the rule; nothing is sent', async () => {
    mock.reset();
    const cases: ReadonlyArray<readonly [string, RegExp]> = [
      [mock.url, /loopback address 127\.0\.0\.0\/8/],
      [mock.url.replace('127.0.0.1', 'localhost'), /loopback/],
      ['http://169.254.169.254/v1', /cloud metadata/],
      ['http://10.0.0.1:8000/v1', /private address 10\.0\.0\.0\/8/],
      ['http://[::1]:9/v1', /loopback/],
      ['http://metadata.google.internal/v1', /cloud metadata|egress/],
    ];
    for (const [host, reason] of cases) {
      const { status, error } = await chatVia(harness, host);
      assert.equal(status, 400, host);
      assert.equal(error?.code, 'AIGW_ERR_EGRESS_DENIED', host);
      assert.match(error?.message ?? '', reason, host);
    }
    assert.equal(mock.requests.length, 0);
  });
});

describe('egress guard (allow list)', () => {
  test('listed destinations are allowed; a reload changes the policy for new connections', async () => {
    const harness = await startHarness({ state: state(['127.0.0.0/8']) });
    try {
      assert.equal((await chatVia(harness, mock.url)).status, 200);
      assert.equal((await chatVia(harness, mock.url.replace('127.0.0.1', 'localhost'))).status, 200, 'localhost resolves into the allowed range');
    } finally {
      await harness.close();
    }
  });

  test('redirects are not followed', async () => {
    const harness = await startHarness({ state: state(['127.0.0.0/8']) });
    try {
      mock.reset();
      mock.enqueue({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data' }, body: '' });
      const { status, error } = await chatVia(harness, mock.url);
      assert.equal(status, 502);
      assert.match(error?.message ?? '', /redirects are not followed/);
      assert.equal(mock.requests.length, 1);
    } finally {
      await harness.close();
    }
  });
});

describe('egress guard on side calls', () => {
  test("a service account's token_uri on a private address is refused by the egress policy", async () => {
    const harness = await startHarness({ state: state() });
    try {
      const response = await fetch(`${harness.gateway.url}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': TEST_GATEWAY_KEY,
          'x-gateway-config': JSON.stringify({
            provider: 'vertex-ai',
            cloudB_region: 'us-central1',
            cloudB_project_id: 'my-project',
            cloudB_service_account_json: {
              type: 'service_account',
              client_email: 'x@y.iam.gserviceaccount.com',
              private_key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
              token_uri: 'http://10.0.0.1/token',
            },
          }),
        },
        body: JSON.stringify({ model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'hi' }] }),
      });
      const body = (await response.json()) as { error: { code: string } };
      assert.equal(response.status, 400);
      assert.equal(body.error.code, 'AIGW_ERR_EGRESS_DENIED');
    } finally {
      await harness.close();
    }
  });
});
