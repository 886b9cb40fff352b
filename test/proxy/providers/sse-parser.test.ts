// The shared incremental SSE parser: framing rules (WHATWG) and robustness to how bytes
// are split across TCP chunks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  SSE_DONE,
  SseEventSizeGuard,
  SseEventTooLargeError,
  SseFrameSplitter,
  SseFrame,
  type SseEvent,
} from '../../../proxy/providers/sse-parser.ts';
import { eventReader } from './golden-runner.ts';

function parseAll(chunks: ReadonlyArray<string | Buffer>): SseEvent[] {
  const parser = eventReader();
  const events: SseEvent[] = [];
  for (const chunk of chunks) events.push(...parser.push(chunk));
  events.push(...parser.end());
  return events;
}

const event = (data: string, name?: string, id?: string): SseEvent => ({ event: name, data, id });

const STREAM = [
  ': keep-alive\n\n',
  'event: message_start\ndata: {"type":"message_start"}\n\n',
  'data: line one\ndata: line two\n\n',
  ':ping\n',
  'id: 7\nevent: delta\ndata: {"text":"héllo ✓ 🎉"}\n\n',
  'data:no-space\n\n',
  'data: [DONE]\n\n',
].join('');

const EXPECTED: SseEvent[] = [
  event('{"type":"message_start"}', 'message_start'),
  event('line one\nline two'),
  event('{"text":"héllo ✓ 🎉"}', 'delta', '7'),
  event('no-space', undefined, '7'),
  event('[DONE]', undefined, '7'),
];

describe('SSE events (the splitter, as translators read it)', () => {
  test('parses named events, multi-line data, ids, and skips comment keep-alives', () => {
    assert.deepEqual(parseAll([STREAM]), EXPECTED);
  });

  test('CRLF and lone CR line ends frame events like LF', () => {
    assert.deepEqual(parseAll([STREAM.replaceAll('\n', '\r\n')]), EXPECTED);
    assert.deepEqual(parseAll([STREAM.replaceAll('\n', '\r')]), EXPECTED);
  });

  test('a CRLF split between two chunks is one line end, not two', () => {
    assert.deepEqual(parseAll(['data: a\r', '\n\r', '\ndata: b\r\n\r\n']), [event('a'), event('b')]);
  });

  test('empty events (a blank line alone, an event with only a comment) produce nothing', () => {
    assert.deepEqual(parseAll(['\n\n\n', ': only a comment\n\n', '\r\n\r\n']), []);
  });

  test('an event with a name but no data is still delivered, with empty data', () => {
    assert.deepEqual(parseAll(['event: ping\n\n']), [event('', 'ping')]);
  });

  test('an empty data line counts as data', () => {
    assert.deepEqual(parseAll(['data:\n\n']), [event('')]);
  });

  test('unknown fields and field names without a colon are ignored', () => {
    assert.deepEqual(parseAll(['retry: 1000\nfoo: bar\ndata\ndata: x\n\n']), [event('\nx')]);
  });

  test('end() flushes a final event that lacks its blank line', () => {
    assert.deepEqual(parseAll(['data: tail']), [event('tail')]);
    assert.deepEqual(parseAll(['data: tail\n']), [event('tail')]);
  });

  test('frames split at every byte offset parse the same', () => {
    const bytes = Buffer.from(STREAM);
    for (let cut = 0; cut <= bytes.length; cut++) {
      assert.deepEqual(parseAll([bytes.subarray(0, cut), bytes.subarray(cut)]), EXPECTED, `split at byte ${cut}`);
    }
  });

  test('byte-by-byte delivery (multi-byte UTF-8 split across chunks) parses the same', () => {
    const bytes = Buffer.from(STREAM.replaceAll('\n', '\r\n'));
    const single = [...bytes].map((byte) => Buffer.from([byte]));
    assert.deepEqual(parseAll(single), EXPECTED);
  });

  test('events complete as soon as their blank line arrives, not at the end', () => {
    const parser = eventReader();
    assert.deepEqual(parser.push('data: one\n'), []);
    assert.deepEqual(parser.push('\ndata: tw'), [event('one')]);
    assert.deepEqual(parser.push('o\n\n'), [event('two')]);
  });

  test('SseFrame.of and SSE_DONE write OpenAI-style data-only frames the parser reads back', () => {
    const payload = { id: 'x', choices: [{ delta: { content: 'a\nb' } }] };
    assert.equal(SseFrame.of(payload).raw, `data: ${JSON.stringify(payload)}\n\n`);
    assert.equal(SseFrame.of(payload).json, payload, 'the frame carries its object: nothing parses it again');
    const events = parseAll([SseFrame.of(payload).raw + SSE_DONE]);
    assert.deepEqual(JSON.parse(events[0]?.data ?? ''), payload);
    assert.equal(events[1]?.data, '[DONE]');
  });
});

describe('SseFrameSplitter and the event cap', () => {
  test('the frames\' raw text, joined, is the input byte for byte (pass-through is exact)', () => {
    const input = STREAM + STREAM.replaceAll('\n', '\r\n') + 'data: unterminated';
    for (const size of [1, 3, 7, 64]) {
      const splitter = new SseFrameSplitter();
      let raw = '';
      const bytes = Buffer.from(input);
      for (let at = 0; at < bytes.length; at += size) for (const frame of splitter.push(bytes.subarray(at, at + size))) raw += frame.raw;
      for (const frame of splitter.end()) raw += frame.raw;
      assert.equal(raw, input, `chunks of ${size}`);
    }
  });

  test('an event over the cap: the splitter throws, and so does a translator reading it (the relay ends the stream)', () => {
    const splitter = new SseFrameSplitter({ maxEventBytes: 1024 });
    assert.deepEqual(splitter.push('data: small\n\n').map((frame) => frame.data), ['small']);
    assert.throws(() => {
      for (let i = 0; i < 10; i++) splitter.push('data: ' + 'x'.repeat(200));
    }, SseEventTooLargeError);

    const parser = eventReader({ maxEventBytes: 1024 });
    assert.deepEqual(parser.push('data: small\n\n'), [event('small')]);
    assert.throws(() => {
      for (let i = 0; i < 10; i++) parser.push('data: ' + 'x'.repeat(200) + '\n');
    }, SseEventTooLargeError);
  });

  test('chunks of one whole data event each (as providers write them) make the frames the general walk makes', () => {
    const events = ['id: 3\n\n', 'data: {"a":"é ✓ 🎉"}\n\n', 'data:{"b":1}\n\n', 'data:\n\n', 'data: x\r\n\r\n', 'data: two\ndata: lines\n\n', 'data: [DONE]\n\n'];
    const fields = (frames: SseFrame[]) => frames.map(({ raw, event, data, id, dispatch }) => ({ raw, event, data, id, dispatch }));
    const splitter = new SseFrameSplitter();
    const perChunk = events.flatMap((text) => splitter.push(Buffer.from(text)));
    assert.deepEqual(fields(perChunk), fields(new SseFrameSplitter().push(events.join(''))));
    assert.equal(perChunk[1]?.id, '3', 'the last event id carries over');
    assert.equal(perChunk.length, 7, 'the id-only event is a frame too (not dispatched)');
  });

  test('a one-event chunk after a chunk that ended in half a character: the held byte is decoded, not dropped', () => {
    const first = Buffer.concat([Buffer.from('data: a\n\n'), Buffer.from([0xc3])]);
    const second = Buffer.from('data: b\n\n');
    const splitter = new SseFrameSplitter();
    const frames = [...splitter.push(first), ...splitter.push(second), ...splitter.end()];
    const whole = new SseFrameSplitter().push(new TextDecoder().decode(Buffer.concat([first, second])));
    assert.deepEqual(frames.map((frame) => frame.raw), whole.map((frame) => frame.raw));
    assert.ok(frames.map((frame) => frame.raw).join('').includes('\ufffd'), 'the half character is still there, replaced');
  });

  test('a one-event chunk over the cap throws, as the same event split across chunks does', () => {
    const big = Buffer.from(`data: ${'x'.repeat(2000)}\n\n`);
    assert.throws(() => new SseFrameSplitter({ maxEventBytes: 1024 }).push(big), SseEventTooLargeError);
    assert.equal(new SseFrameSplitter({ maxEventBytes: 4096 }).push(big)[0]?.data.length, 2000);
  });

  test('many events of any total size pass; only one event is capped', () => {
    const parser = eventReader({ maxEventBytes: 1024 });
    let count = 0;
    for (let i = 0; i < 2000; i++) count += parser.push(`data: ${'y'.repeat(500)}\n\n`).length;
    assert.equal(count, 2000);
  });

  test('a long event arriving in small chunks is scanned once (linear, not quadratic)', { timeout: 10_000 }, () => {
    // 2 MiB in 64-byte chunks: a parser that rescans its buffer per chunk does ~32 G char reads.
    const parser = eventReader({ maxEventBytes: 4 * 1024 * 1024 });
    const piece = 'z'.repeat(64);
    parser.push('data: ');
    for (let i = 0; i < (2 * 1024 * 1024) / 64; i++) assert.deepEqual(parser.push(piece), []);
    const [only] = parser.push('\n\n');
    assert.equal(only?.data.length, 2 * 1024 * 1024);
  });

  test('SseEventSizeGuard passes bytes through and fails the stream past the cap, CRLF or LF', async () => {
    const collect = async (chunks: string[]) => {
      const out: Buffer[] = [];
      await pipeline(Readable.from(chunks.map((chunk) => Buffer.from(chunk))), new SseEventSizeGuard(100), async function* (source) {
        for await (const chunk of source) out.push(chunk as Buffer);
      });
      return Buffer.concat(out).toString();
    };
    const fine = ['data: ' + 'a'.repeat(80) + '\r\n\r\n', 'data: ' + 'b'.repeat(80) + '\n\n', 'data: ' + 'c'.repeat(80) + '\r\r'];
    assert.equal(await collect(fine), fine.join(''));
    await assert.rejects(collect(['data: ' + 'a'.repeat(80) + '\n', 'data: ' + 'b'.repeat(80) + '\n\n']), SseEventTooLargeError);
  });
});
