// The relay's one SSE split: the frames go through the guardrail tail, the cache assembler,
// the usage tap and the held answer's assembler, and each event's JSON is parsed at most
// once across all of them (not at all when no stage needs it).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { StreamAssembler } from '../../../proxy/cache/stream-assembler.ts';
import { GuardedStreamTail, type HookResultsBody } from '../../../proxy/endpoints/guardrail-flow.ts';
import { createAnthropicStreamTranslator } from '../../../proxy/providers/anthropic/anthropic-stream.ts';
import { MAX_SSE_EVENT_BYTES, SseEventTooLargeError, SseFrame, type SseFrameSource } from '../../../proxy/providers/sse-parser.ts';
import { GeminiStreamTranslator } from '../../../proxy/providers/vertex-ai/vertex-gemini-stream.ts';
import { UsageStage, type AnswerUsage } from '../../../proxy/ratelimit/usage-tap.ts';
import { SseFrameFlow, SseFramePipeline, type SseFrameStage } from '../../../proxy/streams/sse-frame-pipeline.ts';
import { chatCompletion, chatCompletionChunks, sseData, type BuildContext } from '../../fixtures/mock-openai-payloads.ts';

const ctx: BuildContext = {
  id: 'chatcmpl-pipe',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  text: 'One split, many readers — ünïcödé and emoji 😀 across chunk edges.',
  promptTokens: 9,
};

const HOOK_RESULTS: HookResultsBody = { before_request_hooks: [], after_request_hooks: [] };

/** The stream cut into pieces of `size` bytes (multi-byte characters split across chunks). */
function pieces(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

async function run(stages: SseFrameStage[], chunks: Buffer[]): Promise<string> {
  const pipeline = Readable.from(chunks).pipe(new SseFramePipeline(stages));
  let out = '';
  for await (const chunk of pipeline) out += String(chunk);
  return out;
}

/** Counts JSON.parse calls while `body` runs. */
async function countingParses<T>(body: () => Promise<T>): Promise<{ result: T; parses: number }> {
  const original = JSON.parse;
  let parses = 0;
  JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
    parses++;
    return original(text, reviver);
  }) as typeof JSON.parse;
  try {
    const result = await body();
    return { result, parses };
  } finally {
    JSON.parse = original;
  }
}

function usageSink() {
  const seen: AnswerUsage[] = [];
  return { seen, sink: { streamEvents: 0, onUsage: (usage: AnswerUsage) => void seen.push(usage) } };
}

describe('SseFramePipeline: one split, one parse per event', () => {
  for (const size of [7, 64, 100_000]) {
    test(`usage + guardrail tail + cache + held assembler parse each event at most once (chunks of ${size} bytes)`, async () => {
      const chunks = chatCompletionChunks(ctx, true);
      const upstream = chunks.map((chunk) => sseData(chunk)).join('') + sseData('[DONE]');
      let checked: unknown;
      const tail = new GuardedStreamTail('chat.completions', async (answer) => {
        checked = answer;
        return HOOK_RESULTS;
      });
      const cache = new StreamAssembler('chat.completions');
      const { seen, sink } = usageSink();
      const held = new StreamAssembler('chat.completions');

      const { result: out, parses } = await countingParses(() => run([tail, cache, new UsageStage(true, sink), held], pieces(upstream, size)));

      // Every JSON event is parsed once (the tail's assembler asks first, the others share
      // it); the gateway's own hook_results event is never parsed.
      assert.equal(parses, chunks.length);
      // The client gets the stream it asked for: no `"usage":null`, no usage chunk, and the
      // hook_results event right before [DONE].
      const expected =
        chatCompletionChunks(ctx, false)
          .map((chunk) => sseData(chunk))
          .join('') +
        sseData({ object: 'chat.completion.chunk', choices: [], hook_results: HOOK_RESULTS }) +
        sseData('[DONE]');
      assert.equal(out, expected);
      assert.equal(sink.streamEvents, chunks.length);
      assert.equal(seen.length, 1);
      assert.equal(seen[0]?.prompt, ctx.promptTokens);
      // Every reader rebuilt the same answer from the shared frames.
      // The held answer is checked as the client gets it: the usage chunk was dropped.
      const { usage: _usage, ...answerWithoutUsage } = chatCompletion(ctx);
      assert.deepEqual(checked, chatCompletion(ctx));
      assert.deepEqual(cache.result(), { ...chatCompletion(ctx), hook_results: HOOK_RESULTS });
      assert.deepEqual(held.result(), { ...answerWithoutUsage, hook_results: HOOK_RESULTS });
    });
  }

  test('no stage reads JSON: nothing is parsed and the bytes pass unchanged', async () => {
    const upstream = ': keep-alive\r\n\r\n' + chatCompletionChunks(ctx, false).map((chunk) => sseData(chunk)).join('') + sseData('[DONE]');
    const { sink } = usageSink();
    const { result: out, parses } = await countingParses(() => run([new UsageStage(false, sink)], pieces(upstream, 5)));
    assert.equal(parses, 0);
    assert.equal(out, upstream);
  });

  test('`"usage":null` chunks are cut without a parse when the gateway asked for usage', async () => {
    const upstream = chatCompletionChunks(ctx, true)
      .slice(0, -1)
      .map((chunk) => sseData(chunk))
      .join('');
    const { sink } = usageSink();
    const { result: out, parses } = await countingParses(() => run([new UsageStage(true, sink)], pieces(upstream, 13)));
    assert.equal(parses, 0);
    assert.equal(
      out,
      chatCompletionChunks(ctx, false)
        .map((chunk) => sseData(chunk))
        .join(''),
    );
  });

  test('a stage that waits holds what follows in order, in the same chunk or later ones', async () => {
    const order: string[] = [];
    const waiting: SseFrameStage = {
      frame: (frame) => (frame.data === 'b' ? Promise.resolve([frame, frame]) : frame),
    };
    const recorder: SseFrameStage = {
      frame: (frame) => {
        order.push(frame.data);
        return frame;
      },
    };
    const out = await run([waiting, recorder], [Buffer.from('data: a\n\ndata: b\n\ndata: c\n\n'), Buffer.from('data: d\n\n')]);
    assert.equal(out, 'data: a\n\ndata: b\n\ndata: b\n\ndata: c\n\ndata: d\n\n');
    assert.deepEqual(order, ['a', 'b', 'b', 'c', 'd']);
  });

  test('an event over the cap fails the stream with SseEventTooLargeError', async () => {
    const pipeline = new SseFramePipeline([], { maxEventBytes: 64 });
    const source = Readable.from([Buffer.from('data: ok\n\n'), Buffer.from('data: ' + 'x'.repeat(100))]);
    await assert.rejects(async () => {
      for await (const _chunk of source.pipe(pipeline));
    }, SseEventTooLargeError);
  });

  // A translator that went on past the event could only end a cut answer as if it were whole.
  const huge = 'x'.repeat(MAX_SSE_EVENT_BYTES + 1);
  const translated: ReadonlyArray<readonly [string, () => SseFrameSource, string[]]> = [
    [
      'Anthropic',
      () => createAnthropicStreamTranslator({ model: 'claude' }),
      [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":1}}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n',
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${huge}"}}\n\n`,
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
    ],
    [
      'Gemini',
      () => new GeminiStreamTranslator({ model: 'gemini' }),
      [
        'data: {"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}\n\n',
        `data: {"candidates":[{"content":{"parts":[{"text":"${huge}"}]}}]}\n\n`,
        'data: {"candidates":[{"content":{"parts":[{"text":"lo"}]},"finishReason":"STOP"}]}\n\n',
      ],
    ],
  ];
  for (const [provider, source, upstream] of translated) {
    test(`${provider}: an upstream event over the cap fails the translated stream too (no [DONE] after a cut answer)`, async () => {
      const pipeline = Readable.from(upstream.map((text) => Buffer.from(text))).pipe(new SseFramePipeline([], { source: source() }));
      let out = '';
      pipeline.on('data', (chunk: Buffer) => (out += String(chunk)));
      const [error] = (await once(pipeline, 'error')) as unknown[];
      assert.ok(error instanceof SseEventTooLargeError, `got ${String(error)}`);
      assert.match(out, /"content":"Hel"/, 'what came before the event was relayed');
      assert.doesNotMatch(out, /\[DONE\]|"error"/, 'the relay, not the translator, words the error');
    });
  }
});

describe('SseFrameFlow: a chunk of whole frames that no stage changed goes out as the chunk itself', () => {
  const keep: SseFrameStage = { frame: (frame) => frame };
  const frameA = 'data: {"a":"ü"}\n\n';
  const frameB = ': keep-alive\n\ndata: {"b":2}\n\n';

  /** What each chunk becomes, in order, as the relay sees it. */
  function outputs(flow: SseFrameFlow, chunks: Buffer[]): Array<string | Buffer> {
    return chunks.map((chunk) => {
      const out = flow.chunk(chunk);
      assert.ok(!(out instanceof Promise));
      return out;
    });
  }

  test('each upstream write one or more whole events: the same Buffer, not a re-encoded string', () => {
    const chunks = [Buffer.from(frameA), Buffer.from(frameB)];
    const out = outputs(new SseFrameFlow([keep]), chunks);
    assert.equal(out[0], chunks[0], 'pushed as it came: no string built and re-encoded');
    assert.equal(out[1], chunks[1]);
  });

  test('a frame cut across chunks: the chunks around the cut go out as text, byte for byte; aligned ones after it as themselves', () => {
    const bytes = Buffer.from(frameA + frameB);
    // The cut falls inside the two bytes of "ü": the first piece ends with half a character.
    const cut = Buffer.from('data: {"a":"').length + 1;
    const chunks = [bytes.subarray(0, cut), bytes.subarray(cut), Buffer.from(frameA)];
    const out = outputs(new SseFrameFlow([keep]), chunks);
    assert.equal(out[0], '', 'nothing whole yet');
    assert.equal(typeof out[1], 'string', 'the rest of a held frame is text');
    assert.equal(out[2], chunks[2]);
    assert.equal(Buffer.concat(out.map((part) => Buffer.from(part))).toString(), frameA + frameB + frameA);
  });

  test('a chunk that ends mid-character after a whole frame is not passed as bytes (the decoder holds the half character)', () => {
    const bytes = Buffer.from(`${frameA}data: "ü"\n\n`);
    const cut = Buffer.byteLength(`${frameA}data: "`) + 1;
    const out = outputs(new SseFrameFlow([keep]), [bytes.subarray(0, cut), bytes.subarray(cut)]);
    assert.deepEqual(out, [frameA, 'data: "ü"\n\n']);
  });

  test('a chunk ending in CR (its LF may open the next chunk) goes out as text', () => {
    const chunks = [Buffer.from('data: 1\r\n\r'), Buffer.from('\ndata: 2\n\n'), Buffer.from('data: 3\n\n')];
    const out = outputs(new SseFrameFlow([keep]), chunks);
    assert.deepEqual(out.slice(0, 2), ['data: 1\r\n\r', '\ndata: 2\n\n']);
    assert.equal(out[2], chunks[2]);
  });

  test('a stage that rewrites or drops a frame: the chunk goes out as the stages made it', () => {
    const rewrite: SseFrameStage = { frame: (frame) => (frame.data === '{"b":2}' ? frame.rewritten('data: {"b":3}\n\n', '{"b":3}', false) : frame) };
    const drop: SseFrameStage = { frame: (frame) => (frame.dispatch ? frame : undefined) };
    assert.deepEqual(outputs(new SseFrameFlow([rewrite]), [Buffer.from(frameB)]), [': keep-alive\n\ndata: {"b":3}\n\n']);
    assert.deepEqual(outputs(new SseFrameFlow([drop]), [Buffer.from(frameB)]), ['data: {"b":2}\n\n']);
  });

  test('a translator as the source: its frames, never the upstream bytes', () => {
    const source: SseFrameSource = { push: () => [SseFrame.of({ translated: true })], end: () => [] };
    assert.deepEqual(outputs(new SseFrameFlow([keep], { source }), [Buffer.from(frameA)]), ['data: {"translated":true}\n\n']);
  });
});
