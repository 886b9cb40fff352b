// The relay's one hop from the upstream body to the client: chunks pass in order through the
// step, a step that waits holds what follows, a slow client pauses the upstream, and a failure
// either ends the stream with the last text it is given or fails it.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough, Readable, Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { FrameRelay, PASS_THROUGH, type RelayStep } from '../../../proxy/streams/frame-relay.ts';
import { SseFrameFlow } from '../../../proxy/streams/sse-frame-pipeline.ts';
import { SseEventTooLargeError } from '../../../proxy/providers/sse-parser.ts';

async function text(stream: Readable): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += String(chunk);
  return out;
}

const never = (): undefined => undefined;

describe('FrameRelay', () => {
  test('passes chunks through unchanged, the first one already buffered before the relay exists', async () => {
    const source = new PassThrough();
    source.write('data: 1\n\n');
    const relay = new FrameRelay(source, PASS_THROUGH, never);
    source.end('data: 2\n\n');
    assert.equal(await text(relay), 'data: 1\n\ndata: 2\n\n');
  });

  test('SSE frames through the flow: partial frames wait for their end, the flow`s end text comes last', async () => {
    const source = Readable.from(['data: {"a"', ':1}\n', '\ndata: [DONE]\n\n'].map((piece) => Buffer.from(piece)));
    const relay = new FrameRelay(source, new SseFrameFlow([]), never);
    assert.equal(await text(relay), 'data: {"a":1}\n\ndata: [DONE]\n\n');
  });

  test('a step that waits holds the later chunks and the end, in order', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const step: RelayStep = {
      chunk: (chunk) => (String(chunk) === 'b' ? gate.then(() => 'B') : String(chunk)),
      end: () => gate.then(() => '!'),
    };
    const source = new PassThrough();
    const relay = new FrameRelay(source, step, never);
    const out = text(relay);
    source.write('a');
    source.write('b');
    source.write('c');
    source.end('d');
    await new Promise((resolve) => setImmediate(resolve));
    release();
    assert.equal(await out, 'aBcd!');
  });

  test('a slow client pauses the source (bounded buffering) and everything still arrives', async () => {
    const piece = Buffer.alloc(4096, 120);
    let produced = 0;
    const source = new Readable({
      read() {
        this.push(produced++ < 64 ? piece : null);
      },
    });
    const relay = new FrameRelay(source, PASS_THROUGH, never);
    await once(relay, 'readable');
    // Nobody reads: the source stops at the two high-water marks (64 KiB each), not at its end.
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(produced <= 2 * 16 + 2, `the source ran ahead to ${produced} pieces`);
    let received = 0;
    await new Promise<void>((resolve, reject) => {
      relay.pipe(
        new Writable({
          highWaterMark: 1,
          write(chunk: Buffer, _encoding, callback) {
            received += chunk.length;
            setImmediate(callback);
          },
        }),
      ).on('finish', resolve).on('error', reject);
    });
    assert.equal(received, 64 * 4096);
  });

  test('a failure the callback words ends the stream with that text after what already passed', async () => {
    const source = new PassThrough();
    const seen: Error[] = [];
    const relay = new FrameRelay(source, PASS_THROUGH, (error) => {
      seen.push(error);
      return 'event: error\n\n';
    });
    const out = text(relay);
    source.write('data: 1\n\n');
    await new Promise((resolve) => setImmediate(resolve));
    source.destroy(Object.assign(new Error('stalled'), { code: 'UND_ERR_BODY_TIMEOUT' }));
    assert.equal(await out, 'data: 1\n\nevent: error\n\n');
    assert.equal(seen.length, 1);
  });

  test('a step that throws (an oversize event) goes to the failure callback too', async () => {
    const source = Readable.from([Buffer.from(`data: ${'x'.repeat(200)}`)]);
    const relay = new FrameRelay(source, new SseFrameFlow([], { maxEventBytes: 64 }), (error) => (error instanceof SseEventTooLargeError ? 'event: too-large\n\n' : undefined));
    assert.equal(await text(relay), 'event: too-large\n\n');
  });

  test('any other failure fails the relay with it; a later source error does not throw', async () => {
    const source = new PassThrough();
    const relay = new FrameRelay(source, PASS_THROUGH, never);
    const failed = once(relay, 'error');
    source.destroy(new Error('reset'));
    const [error] = (await failed) as [Error];
    assert.equal(error.message, 'reset');
    source.emit('error', new Error('again'));
  });

  test('destroyed by the consumer (the client left): the source is no longer read', async () => {
    const source = new PassThrough();
    const relay = new FrameRelay(source, PASS_THROUGH, never);
    relay.destroy();
    await once(relay, 'close');
    source.write('late');
    assert.equal(source.listenerCount('data'), 0);
    assert.equal(source.isPaused(), true);
  });
});
