// Finding 11 (gateway edge): oversized headers (431) and malformed HTTP (400) answered with
// Fastify's body, `content-type: text/plain` got 400 instead of 415, and
// `x-gateway-request-timeout: 0x10` was read as 16 ms. Every error the gateway produces is
// OpenAI-shaped and names what was wrong; integer headers take decimal digits only.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { sendRaw, statusOf } from './raw-http.ts';
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

/** Writes raw bytes and returns the status and parsed JSON body of the answer. */
async function raw(bytes: string): Promise<{ status: number; body: { error?: { code?: string; type?: string; message?: string } } }> {
  const text = await sendRaw(harness.gateway.origin, bytes);
  const status = statusOf(text);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  try {
    return { status, body: JSON.parse(body) as never };
  } catch {
    throw new Error(`not JSON (${status}): ${JSON.stringify(body.slice(0, 200))}`);
  }
}

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

function chat(headers: Record<string, string>): Promise<Response> {
  return fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': TEST_GATEWAY_KEY,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.url,
      authorization: 'Bearer sk-client-000000000000000000000000',
      ...headers,
    },
    body: CHAT,
  });
}

describe('every gateway error is OpenAI-shaped', () => {
  test('oversized headers → 431 in the OpenAI shape', async () => {
    const { status, body } = await raw(`GET /v1/logs HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.equal(status, 431);
    assert.equal(body.error?.code, 'AIGW_ERR_HEADERS_TOO_LARGE');
    assert.equal(body.error?.type, 'invalid_request_error');
  });

  test('malformed HTTP → 400 in the OpenAI shape', async () => {
    for (const request of ['GET /v1/logs HTTP/1.1\r\nhost: x\r\nnot a header line\r\n\r\n', 'NOT-HTTP\r\n\r\n', 'GET /v1/logs HTTP/1.1\r\ncontent-length: x\r\n\r\n']) {
      const { status, body } = await raw(request);
      assert.equal(status, 400, request);
      assert.equal(body.error?.code, 'AIGW_ERR_MALFORMED_REQUEST');
    }
  });

  test('a non-JSON content type on a JSON route → 415 naming content-type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const response = await chat({ 'content-type': type });
      assert.equal(response.status, 415, type);
      const body = (await response.json()) as { error: { code: string; param: string } };
      assert.equal(body.error.code, 'AIGW_ERR_UNSUPPORTED_MEDIA_TYPE');
      assert.equal(body.error.param, 'content-type');
    }
  });

  test('integer headers accept decimal digits only', async () => {
    for (const value of ['0x10', '1e3', '+16', '16.0', '-1', '0b11', '0']) {
      const response = await chat({ 'x-gateway-request-timeout': value });
      assert.equal(response.status, 400, value);
      const body = (await response.json()) as { error: { code: string; param: string } };
      assert.equal(body.error.code, 'AIGW_ERR_INVALID_HEADER');
      assert.equal(body.error.param, 'x-gateway-request-timeout');
    }
    const ok = await chat({ 'x-gateway-request-timeout': '5000' });
    assert.equal(ok.status, 200);
    await ok.arrayBuffer();
  });

  test('a trace id outside printable ASCII is replaced, not echoed', async () => {
    const response = await chat({ 'x-gateway-trace-id': 'abc def' });
    assert.notEqual(response.headers.get('x-gateway-trace-id'), 'abc def');
    await response.arrayBuffer();
  });
});
