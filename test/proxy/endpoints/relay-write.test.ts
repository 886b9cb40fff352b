// sendRelayed against reply.send(FrameRelay) on the same reply state: the same bytes on the wire,
// the same answer to a failure before the first piece, the client's pace respected, and a client
// that leaves stops the reading.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { describe, test } from 'node:test';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sendRelayed } from '../../../proxy/endpoints/plain-write.ts';
import { FrameRelay, PASS_THROUGH, type RelayStep } from '../../../proxy/streams/frame-relay.ts';
import { SseFrameFlow } from '../../../proxy/streams/sse-frame-pipeline.ts';
import { eventually } from '../../helpers/eventually.ts';
import { portOf, rawPost, countSends, useDirectWriteServers } from '../../helpers/direct-write-servers.ts';

const EVENTS = ['data: {"a":"héllo"}\n\n', 'data: {"b":2}\n', '\n: keep-alive\n\n', 'data: [DONE]\n\n'];
const FAILING: RelayStep = {
  chunk: () => {
    throw new Error('step failed');
  },
  end: () => '',
};

const servers = useDirectWriteServers(route);
/** reply.send calls on the direct routes. */
const calls = { sends: 0 };
/** The slow client's source, to watch it being paused and let go. */
let slowSource: PassThrough | undefined;
/** Whether the 'buffered' route had written its head when sendRelayed returned. */
let headersSentOnReturn: boolean | undefined;

function route(target: FastifyInstance): void {
  target.post('/:mode/:kind', async (request, reply) => {
    const { mode, kind } = request.params as { mode: string; kind: string };
    reply.header('x-gateway-trace-id', 't').header('content-type', 'text/event-stream').header('x-ratelimit-a', ['1', '2']).code(200);
    if (kind === 'bad-header') reply.header('x-relayed', 'a\u0001b');
    let source: Readable;
    let step: RelayStep;
    if (kind === 'slow') {
      slowSource = new PassThrough();
      source = slowSource;
      step = PASS_THROUGH;
    } else if (kind === 'buffered') {
      // The upstream's first chunk is in the stream already when the relay starts.
      const buffered = new PassThrough();
      buffered.write(EVENTS[0]);
      setImmediate(() => buffered.end(EVENTS[3]));
      const answered = sendRelayed(reply, buffered, new SseFrameFlow([]), () => undefined);
      headersSentOnReturn = reply.raw.headersSent;
      return answered;
    } else {
      source = Readable.from(EVENTS.map((text) => Buffer.from(text)), { objectMode: false });
      step = kind === 'fails' ? FAILING : new SseFrameFlow([]);
    }
    const failure = (): undefined => undefined;
    if (mode === 'send') return reply.send(new FrameRelay(source, step, failure));
    countSends(reply, calls);
    return sendRelayed(reply, source, step, failure);
  });
}

describe('sendRelayed', () => {
  test('a stream: the same bytes as reply.send(FrameRelay), without reply.send', async () => {
    calls.sends = 0;
    const direct = await rawPost(servers.plain, '/relay/events');
    assert.equal(direct, await rawPost(servers.plain, '/send/events'));
    assert.match(direct, /transfer-encoding: chunked/i);
    assert.ok(direct.includes('data: [DONE]'));
    assert.equal(calls.sends, 0);
  });

  test('a chunk the source holds already is written before sendRelayed returns, not a tick later', async () => {
    headersSentOnReturn = undefined;
    const answer = await rawPost(servers.plain, '/relay/buffered');
    assert.equal(headersSentOnReturn, true);
    const body = answer.split('\r\n\r\n').slice(1).join('\r\n\r\n');
    const first = body.indexOf('data: {"a":');
    assert.ok(first !== -1 && first < body.indexOf('data: [DONE]'), body);
  });

  test('a failure before the first piece: the error answer reply.send gives', async () => {
    calls.sends = 0;
    // The same status, fields and body; the fields' order differs (reply.send(stream) had
    // copied the stream's headers onto the response before the error answer was made).
    const sorted = (answer: string): string => {
      const [head = '', body] = answer.split('\r\n\r\n');
      const [status, ...fields] = head.split('\r\n');
      return [status, ...fields.sort(), '', body].join('\r\n');
    };
    const direct = await rawPost(servers.plain, '/relay/fails');
    assert.equal(sorted(direct), sorted(await rawPost(servers.plain, '/send/fails')));
    assert.match(direct, /^HTTP\/1.1 500/);
    assert.ok(calls.sends > 0, 'the error went through reply.send');
  });

  test('a header Node refuses to write: an error answer, no throw into the relay, the upstream let go', async () => {
    const direct = await rawPost(servers.plain, '/relay/bad-header');
    assert.match(direct, /^HTTP\/1.1 500/);
    assert.match(direct, /Invalid character in header content/);
    assert.equal(await rawPost(servers.plain, '/relay/events').then((answer) => answer.includes('data: [DONE]')), true, 'still serving');
  });

  test('an onSend hook (the exchange capture) still sees the stream', async () => {
    servers.hookSaw.length = 0;
    assert.equal(await rawPost(servers.hooked, '/relay/events'), await rawPost(servers.hooked, '/send/events'));
    assert.equal(servers.hookSaw.length, 2);
    assert.ok(servers.hookSaw[0] instanceof FrameRelay);
  });

  test('a client that reads slowly: the source waits for it, and every byte arrives in order', async () => {
    const socket = connect(portOf(servers.plain), '127.0.0.1');
    socket.write('POST /relay/slow HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
    socket.pause();
    const source = await eventually(() => slowSource, 'the route ran');
    const piece = Buffer.alloc(64 * 1024, 'x');
    let written = 0;
    // Written until the relay stops reading: the response and the socket are full.
    await eventually(() => {
      for (let i = 0; i < 4 && !source.isPaused(); i++) {
        source.write(piece);
        written += piece.length;
      }
      return source.isPaused();
    }, 'the relay paused its source', { timeoutMs: 20_000 });
    source.end('END');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    await eventually(() => Buffer.concat(chunks).toString('latin1').endsWith('0\r\n\r\n'), 'the whole answer', { timeoutMs: 20_000 });
    socket.destroy();
    const body = Buffer.concat(chunks).toString('latin1');
    const payload = body.slice(body.indexOf('\r\n\r\n') + 4).replace(/\r\n[0-9a-f]+\r\n/g, '').replace(/^[0-9a-f]+\r\n/, '');
    assert.equal(payload.split('x').length - 1, written, 'every byte written came through');
    assert.ok(payload.includes('END'));
  });

  test('a client that leaves mid-stream: the relay stops reading its source, nothing throws', async () => {
    slowSource = undefined;
    const socket = connect(portOf(servers.plain), '127.0.0.1');
    socket.write('POST /relay/slow HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
    const source = await eventually(() => slowSource, 'the route ran');
    source.write('data: 1\n\n');
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.destroy();
    await eventually(() => source.listenerCount('data') === 0, 'the relay let go of its source');
    assert.equal(source.listenerCount('error'), 1, 'its error listener stays: a late failure does not crash');
    source.destroy(new Error('late upstream failure'));
  });
});
