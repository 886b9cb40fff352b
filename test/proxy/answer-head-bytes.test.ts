// The exact status line and headers a client gets (order and case included): pinned so a
// faster way of writing the answer cannot change a byte of them (issue 32).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { rawExchange } from '../helpers/raw-http.ts';

const ANSWER = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } });

let upstream: Server;
let upstreamUrl: string;
let harness: Harness;

before(async () => {
  // The upstream's headers: some relayed (x-request-id, openai-*, x-ratelimit-*), some never (server, set-cookie).
  upstream = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const sent = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model?: string; stream?: boolean };
      if (sent.model === 'refused-model') {
        response.writeHead(401, { 'content-type': 'application/json', 'x-request-id': 'req_err', server: 'mock', 'set-cookie': 'a=b' });
        response.end(JSON.stringify({ error: { message: 'Incorrect API key provided: sk-up***', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
        return;
      }
      if (sent.stream === true) {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'req_stream' });
        response.end('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n');
        return;
      }
      response.writeHead(200, {
        'content-type': 'application/json',
        'x-request-id': 'req_plain',
        'openai-processing-ms': '12',
        'x-ratelimit-remaining-requests': '99',
        server: 'mock',
        'set-cookie': 'a=b',
      });
      response.end(ANSWER);
    });
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  const address = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/v1`;
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'first', provider: 'openai', apiKey: 'sk-test-not-real', customHost: upstreamUrl },
        { slug: 'second', provider: 'openai', apiKey: 'sk-test-not-real', customHost: upstreamUrl },
      ],
      configs: [{ id: 'pair', config: { strategy: { mode: 'fallback' }, retry: { attempts: 2 }, targets: [{ provider: '@first' }, { provider: '@second' }] } }],
    }),
  });
});

after(async () => {
  await harness.close();
  await new Promise((done) => upstream.close(done));
});

/** One request on a raw keep-alive socket: the answer's head as sent (date masked) and its body. */
async function exchange(method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ head: string; body: string }> {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: gateway', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  if (body !== '') lines.push(`content-length: ${Buffer.byteLength(body)}`);
  return rawExchange(Number(new URL(harness.gateway.origin).port), `${lines.join('\r\n')}\r\n\r\n${body}`);
}

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
const SAVED = { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': 'pair', 'x-gateway-trace-id': 'trace-pinned-1' };

describe('answer heads, byte for byte', () => {
  test('a plain answer through a saved fallback config', async () => {
    const { head, body } = await exchange('POST', '/v1/chat/completions', SAVED, CHAT);
    assert.equal(
      head,
      [
        'HTTP/1.1 200 OK',
        'x-gateway-trace-id: trace-pinned-1',
        'x-gateway-cache-status: DISABLED',
        'x-gateway-provider: openai',
        'x-gateway-last-used-option-index: config.targets[0]',
        'x-gateway-retry-attempt-count: 0',
        'content-type: application/json',
        'x-request-id: req_plain',
        'openai-processing-ms: 12',
        'x-ratelimit-remaining-requests: 99',
        'content-length: ' + Buffer.byteLength(ANSWER),
        'Date: <date>',
        'Connection: keep-alive',
        'Keep-Alive: timeout=72',
        '',
      ].join('\r\n'),
    );
    assert.equal(body, ANSWER);
  });

  test('an upstream error answer, normalised', async () => {
    const { head, body } = await exchange('POST', '/v1/chat/completions', SAVED, CHAT.replace('gpt-4o-mini', 'refused-model'));
    const expected = JSON.parse(body) as { error: { code: string } };
    assert.equal(expected.error.code, 'invalid_api_key');
    assert.equal(
      head,
      [
        'HTTP/1.1 401 Unauthorized',
        'x-gateway-trace-id: trace-pinned-1',
        'x-gateway-cache-status: DISABLED',
        'x-gateway-provider: openai',
        // Both targets refused: the last one tried answers.
        'x-gateway-last-used-option-index: config.targets[1]',
        'x-gateway-retry-attempt-count: 0',
        'content-type: application/json; charset=utf-8',
        'x-request-id: req_err',
        'content-length: ' + Buffer.byteLength(body),
        'Date: <date>',
        'Connection: keep-alive',
        'Keep-Alive: timeout=72',
        '',
      ].join('\r\n'),
    );
  });

  test("the gateway's own error (no API key)", async () => {
    const { head, body } = await exchange('POST', '/v1/chat/completions', { 'content-type': 'application/json', 'x-gateway-trace-id': 'trace-pinned-2' }, CHAT);
    assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'AIGW_ERR_MISSING_API_KEY');
    assert.equal(
      head,
      ['HTTP/1.1 401 Unauthorized', 'x-gateway-trace-id: trace-pinned-2', 'content-type: application/json; charset=utf-8', 'content-length: ' + Buffer.byteLength(body), 'Date: <date>', 'Connection: keep-alive', 'Keep-Alive: timeout=72', ''].join('\r\n'),
    );
  });

  test('a streamed answer', async () => {
    const { head } = await exchange('POST', '/v1/chat/completions', SAVED, JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(
      head,
      [
        'HTTP/1.1 200 OK',
        'x-gateway-trace-id: trace-pinned-1',
        'x-gateway-cache-status: DISABLED',
        'x-gateway-provider: openai',
        'x-gateway-last-used-option-index: config.targets[0]',
        'x-gateway-retry-attempt-count: 0',
        'content-type: text/event-stream',
        'x-request-id: req_stream',
        'Date: <date>',
        'Connection: keep-alive',
        'Keep-Alive: timeout=72',
        'Transfer-Encoding: chunked',
        '',
      ].join('\r\n'),
    );
  });
});
