import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import diagnostics from 'node:diagnostics_channel';
import { after, before, describe, test } from 'node:test';
import { Agent } from 'undici';
import { GatewayError } from '../../../proxy/errors.ts';
import { guardedAnswer } from '../../../proxy/upstream/answer-handler.ts';
import type { GuardedRequest } from '../../../proxy/upstream/guarded-call.ts';
import { prefixBytes, readBodyBytes } from '../../../proxy/upstream/read-body.ts';
import { eventually } from '../../helpers/eventually.ts';

// guardedAnswer reads a plain 2xx answer straight from the connection (answer-handler.ts):
// what it gathers, where it hands over to a stream, and that caps, aborts, timeouts and
// redirects end as they did through dispatcher.request.

const BIG = Buffer.alloc(300_000, 'x');
const SECRET = 'sk-test-secret-12345';

function route(request: IncomingMessage, response: ServerResponse): void {
  switch (request.url) {
    case '/json':
      response.setHeader('content-type', 'application/json');
      response.end(`{"ok":true,"key":"${SECRET}"}`);
      return;
    case '/chunked':
      response.setHeader('content-type', 'application/json');
      response.write('{"a":');
      setImmediate(() => response.end('1}'));
      return;
    case '/big':
      response.setHeader('content-type', 'application/octet-stream');
      response.end(BIG);
      return;
    case '/sse':
      response.setHeader('content-type', 'text/event-stream');
      response.end('data: 1\n\n');
      return;
    case '/error':
      response.statusCode = 429;
      response.end(`{"error":"slow down ${SECRET}"}`);
      return;
    case '/redirect':
      response.statusCode = 302;
      response.setHeader('location', 'http://169.254.169.254/');
      response.end();
      return;
    case '/sse-held':
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.flushHeaders();
      held.push(response);
      return;
    case '/sse-empty':
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end();
      return;
    case '/stall':
      response.setHeader('content-type', 'application/json');
      response.write('{"a":');
      stalled.push(response);
      return;
    default:
      response.statusCode = 404;
      response.end();
  }
}

const stalled: ServerResponse[] = [];
/** Streams that sent their headers and wait for the test to send their bytes. */
const held: ServerResponse[] = [];
let server: Server;
let agent: Agent;
let origin = '';

function call(path: string, extra: Partial<GuardedRequest> = {}): GuardedRequest {
  return { dispatcher: agent, url: `${origin}${path}`, method: 'POST', headers: { authorization: `Bearer ${SECRET}` }, body: '{}', upstream: 'mock', ...extra };
}

const ALL = (): boolean => true;

/**
 * Starts a call whose upstream answer waits in `waiting`, aborts it: it rejects with the
 * reason, the upstream connection is dropped and no abort listener is left.
 */
async function abortRejectsAndDrops(waiting: readonly ServerResponse[], start: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
  const controller = new AbortController();
  const before = waiting.length;
  const pending = start(controller.signal);
  const response = await eventually(() => waiting[before], 'the upstream answer started');
  const reason = new GatewayError('AIGW_ERR_REQUEST_TIMEOUT', 'gone');
  controller.abort(reason);
  await assert.rejects(pending, (error: unknown) => error === reason);
  await eventually(() => response.destroyed || response.socket === null || response.socket.destroyed, 'the upstream connection closed');
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
}

// One upstream for both suites.
before(async () => {
  server = createServer(route);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  agent = new Agent();
});
after(async () => {
  for (const response of [...stalled, ...held]) response.destroy();
  await agent.close();
  server.close();
});

describe('guardedAnswer (a plain answer read without a stream)', () => {

  test('a 2xx answer is read whole: prefix ended, bytes as sent, body an ended stream, redact bound, abort listener gone', async () => {
    const controller = new AbortController();
    const { response, prefix } = await guardedAnswer(call('/chunked', { signal: controller.signal }), 1024, ALL);
    assert.equal(response.statusCode, 200);
    assert.equal(prefix?.ended, true);
    assert.equal(prefixBytes(prefix).toString(), '{"a":1}');
    assert.equal(response.headers['content-type'], 'application/json');
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    await response.body.dump();
    const whole = await guardedAnswer(call('/json'), 1024, ALL);
    assert.equal(whole.response.redact(prefixBytes(whole.prefix ?? assert.fail()).toString()), '{"ok":true,"key":"[redacted]"}');
  });

  test('past the limit: the prefix holds the first bytes, the rest is read on from the body', async () => {
    const { response, prefix } = await guardedAnswer(call('/big'), 1024, ALL);
    assert.ok(prefix !== undefined && !prefix.ended && prefix.size > 1024);
    const rest = await readBodyBytes(response.body, 1_000_000, Number(response.headers['content-length']), prefix);
    assert.deepEqual(rest, BIG);
  });

  test('an answer the rule declines, and an error status, come with a stream and no prefix', async () => {
    const sse = await guardedAnswer(call('/sse'), 1024, (headers) => !/event-stream/.test(String(headers['content-type'])));
    assert.equal(sse.prefix, undefined);
    assert.equal(await sse.response.body.text(), 'data: 1\n\n');
    const error = await guardedAnswer(call('/error'), 1024, ALL);
    assert.equal(error.prefix, undefined);
    assert.equal(error.response.statusCode, 429);
    assert.equal(error.response.redact(await error.response.body.text()), '{"error":"slow down [redacted]"}');
  });

  test('a redirect is a 502, never followed', async () => {
    await assert.rejects(guardedAnswer(call('/redirect'), 1024, ALL), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'AIGW_ERR_UPSTREAM_INVALID_RESPONSE');
      assert.match(error.message, /redirect \(302\)/);
      return true;
    });
  });

  test('an abort while the answer is gathered rejects with the reason and drops the connection', async () => {
    await abortRejectsAndDrops(stalled, (signal) => guardedAnswer(call('/stall', { signal }), 1024, ALL));
  });

  test('an already aborted signal fails the call as dispatcher.request did (its reason, mapped)', async () => {
    const reason = new Error('client left');
    await assert.rejects(guardedAnswer(call('/json', { signal: AbortSignal.abort(reason) }), 1024, ALL), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'AIGW_ERR_UPSTREAM_UNREACHABLE');
      return true;
    });
  });

  test('a body that stalls is the upstream timeout (504), or the request_timeout (408) when the caller set one', async () => {
    await assert.rejects(guardedAnswer(call('/stall', { bodyTimeoutMs: 50 }), 1024, ALL), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'AIGW_ERR_UPSTREAM_TIMEOUT');
      return true;
    });
    await assert.rejects(guardedAnswer(call('/stall', { requestTimeoutMs: 50 }), 1024, ALL), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'AIGW_ERR_REQUEST_TIMEOUT');
      return true;
    });
  });
});

describe('guardedAnswer with untilData (a stream settles on its first bytes)', () => {
  const SSE_ONLY = (headers: Record<string, unknown>): boolean => !/event-stream/.test(String(headers['content-type']));
  test('headers alone do not settle it; its first bytes do, and they and the rest are in its stream', async () => {
    let headersSeen = 0;
    const onHeaders = (): void => void headersSeen++;
    diagnostics.subscribe('undici:request:headers', onHeaders);
    try {
      const before = held.length;
      let settled = false;
      const pending = guardedAnswer(call('/sse-held'), 1024, SSE_ONLY, true).finally(() => {
        settled = true;
      });
      const response = await eventually(() => held[before], 'the stream sent its headers');
      await eventually(() => headersSeen > 0, 'the client has the headers');
      // Had the headers settled it, the settlement would have run before this macrotask.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(settled, false);
      response.write('data: 1\n\n');
      const answer = await pending;
      assert.equal(answer.prefix, undefined);
      response.end('data: 2\n\n');
      assert.equal(await answer.response.body.text(), 'data: 1\n\ndata: 2\n\n');
    } finally {
      diagnostics.unsubscribe('undici:request:headers', onHeaders);
    }
  });

  test('a stream that ends before any byte is an upstream failure the walk can fall back from; its abort listener goes', async () => {
    const controller = new AbortController();
    await assert.rejects(guardedAnswer(call('/sse-empty', { signal: controller.signal }), 1024, SSE_ONLY, true), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'AIGW_ERR_UPSTREAM_UNREACHABLE');
      return true;
    });
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    // Without untilData the same answer settles on its headers, with an empty stream.
    const plain = await guardedAnswer(call('/sse-empty'), 1024, SSE_ONLY);
    assert.equal(await plain.response.body.text(), '');
  });

  test('an abort before the first byte rejects with the reason (no hang) and drops the connection', async () => {
    await abortRejectsAndDrops(held, (signal) => guardedAnswer(call('/sse-held', { signal }), 1024, SSE_ONLY, true));
  });

  test('a stream that breaks before its first byte rejects as a broken connection', async () => {
    const before = held.length;
    const pending = guardedAnswer(call('/sse-held'), 1024, SSE_ONLY, true);
    const response = await eventually(() => held[before], 'the stream sent its headers');
    response.socket?.destroy();
    await assert.rejects(pending, (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'AIGW_ERR_UPSTREAM_UNREACHABLE');
      return true;
    });
  });
});
