// A cached answer replayed to a streaming request must read, through the official openai
// SDK, exactly like the answer itself: same text, tool calls and usage. The replayed SSE is
// served by the mock upstream (a real HTTP server, frames written separately) to a real
// OpenAI client.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { StreamAssembler } from '../../../proxy/cache/stream-assembler.ts';
import { pieces, replayAsSse } from '../../../proxy/cache/stream-replay.ts';
import type { InferenceEndpoint } from '../../../proxy/openai/inference-endpoint.ts';
import { chatCompletion, textCompletion, type BuildContext, type JsonObject } from '../../fixtures/mock-openai-payloads.ts';
import { startMockOpenAI, type MockOpenAI } from '../../fixtures/mock-openai.ts';

const ctx: BuildContext = {
  id: 'chatcmpl-cached1',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  text: 'The capital of France is Paris. It has been the capital since the 10th century, with a few interruptions — 😀 included, to check that characters outside the BMP survive the cutting into pieces.',
  promptTokens: 14,
};

const toolAnswer: JsonObject = {
  id: 'chatcmpl-tools',
  object: 'chat.completion',
  created: 1_700_000_001,
  model: 'gpt-4o-mini',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        annotations: [],
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city: 'Paris', unit: 'celsius', detail: 'x'.repeat(100) }) } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' } },
        ],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 30, completion_tokens: 25, total_tokens: 55 },
  system_fingerprint: 'fp_tools',
};

const refusalAnswer: JsonObject = {
  id: 'chatcmpl-refusal',
  object: 'chat.completion',
  created: 1_700_000_002,
  model: 'gpt-4o',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: null, refusal: "I'm sorry, I can't help with that request.", annotations: [] },
      logprobs: { content: null, refusal: [{ token: "I'm", logprob: -0.01, bytes: [73, 39, 109], top_logprobs: [] }] },
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 9, completion_tokens: 10, total_tokens: 19 },
};

const roundTrip = (endpoint: InferenceEndpoint, answer: unknown, includeUsage = true): unknown => {
  const sse = replayAsSse(endpoint, answer, { includeUsage });
  assert.ok(sse !== undefined);
  const assembler = new StreamAssembler(endpoint);
  assembler.push(sse);
  return assembler.result();
};

describe('replayAsSse read by the official openai SDK', () => {
  let mock: MockOpenAI;
  let client: OpenAI;
  before(async () => {
    mock = await startMockOpenAI();
    client = new OpenAI({ baseURL: mock.url, apiKey: 'sk-test', maxRetries: 0 });
  });
  after(() => mock.close());

  const serve = (endpoint: InferenceEndpoint, answer: unknown, includeUsage: boolean): void => {
    const body = replayAsSse(endpoint, answer, { includeUsage });
    assert.ok(body !== undefined);
    mock.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body });
  };

  test('chat text: the chunks rebuild the text, usage comes last, the SDK sees [DONE]', async () => {
    const answer = chatCompletion(ctx);
    serve('chat.completions', answer, true);
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Capital of France?' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let contentChunks = 0;
    let usage: unknown;
    let finish: string | null = null;
    for await (const chunk of stream) {
      assert.equal(chunk.id, ctx.id);
      assert.equal(chunk.object, 'chat.completion.chunk');
      const choice = chunk.choices[0];
      if (choice?.delta.content) {
        text += choice.delta.content;
        contentChunks++;
      }
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, ctx.text);
    assert.ok(contentChunks > 1, `content in ${contentChunks} chunks`);
    assert.equal(finish, 'stop');
    assert.deepEqual(usage, answer['usage']);
  });

  test("chat text: the SDK's own accumulator rebuilds the cached message", async () => {
    const answer = chatCompletion(ctx);
    serve('chat.completions', answer, true);
    const runner = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'q' }], stream_options: { include_usage: true } });
    const final = await runner.finalChatCompletion();
    const cached = (answer['choices'] as JsonObject[])[0]!;
    assert.equal(final.choices[0]?.message.content, ctx.text);
    assert.equal(final.choices[0]?.finish_reason, cached['finish_reason']);
    assert.deepEqual(final.usage, answer['usage']);
  });

  test('tool calls: ids, names and arguments arrive intact', async () => {
    serve('chat.completions', toolAnswer, false);
    const runner = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'weather?' }] });
    const final = await runner.finalChatCompletion();
    const expected = ((toolAnswer['choices'] as JsonObject[])[0]!['message'] as JsonObject)['tool_calls'] as JsonObject[];
    const got = final.choices[0]?.message.tool_calls?.map((call) => (call.type === 'function' ? { id: call.id, type: call.type, function: { name: call.function.name, arguments: call.function.arguments } } : call));
    assert.deepEqual(got, expected);
    assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(final.usage, undefined, 'no usage when the request did not ask for it');
  });

  test('completions: text_completion chunks rebuild every choice', async () => {
    const answer = textCompletion(ctx, 2);
    serve('completions', answer, true);
    const stream = await client.completions.create({ model: 'gpt-4o-mini', prompt: ['a', 'b'], stream: true, stream_options: { include_usage: true } });
    const texts = ['', ''];
    let usage: unknown;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) texts[choice.index] += choice.text;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual(texts, [ctx.text, ctx.text]);
    assert.deepEqual(usage, answer['usage']);
  });
});

describe('replayAsSse', () => {
  test('round-trips through the stream assembler to the cached answer', () => {
    assert.deepEqual(roundTrip('chat.completions', chatCompletion(ctx)), chatCompletion(ctx));
    assert.deepEqual(roundTrip('chat.completions', toolAnswer), toolAnswer);
    assert.deepEqual(roundTrip('chat.completions', refusalAnswer), refusalAnswer);
    assert.deepEqual(roundTrip('completions', textCompletion(ctx, 3)), textCompletion(ctx, 3));
    const multi = chatCompletion(ctx);
    multi['choices'] = [0, 1].map((index) => ({ ...(multi['choices'] as JsonObject[])[0]!, index }));
    assert.deepEqual(roundTrip('chat.completions', multi), multi);
  });

  test('usage: a usage chunk and usage:null on the others only when asked', () => {
    const frames = (includeUsage: boolean): JsonObject[] =>
      replayAsSse('chat.completions', chatCompletion(ctx), { includeUsage })!
        .split('\n\n')
        .filter((f) => f.startsWith('data: {'))
        .map((f) => JSON.parse(f.slice(6)) as JsonObject);
    const withUsage = frames(true);
    assert.ok(withUsage.slice(0, -1).every((f) => f['usage'] === null));
    assert.deepEqual(withUsage.at(-1), { ...withUsage.at(-1), choices: [], usage: chatCompletion(ctx)['usage'] });
    assert.ok(frames(false).every((f) => !('usage' in f) && (f['choices'] as unknown[]).length === 1));
    assert.ok(replayAsSse('chat.completions', chatCompletion(ctx), { includeUsage: true })!.endsWith('data: [DONE]\n\n'));
  });

  test('embeddings, responses and answers of unexpected shape are not replayed', () => {
    const embeddings = { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1] }], model: 'e', usage: {} };
    assert.equal(replayAsSse('embeddings', embeddings, { includeUsage: false }), undefined);
    assert.equal(replayAsSse('responses', { object: 'response', output: [] }, { includeUsage: false }), undefined);
    for (const bad of [null, 'text', [], { choices: 'x' }, { choices: [1] }, { choices: [{ index: 0 }] }]) {
      assert.equal(replayAsSse('chat.completions', bad, { includeUsage: true }), undefined, JSON.stringify(bad));
    }
  });

  test('pieces: exact concatenation, no split surrogate pairs, a bounded count', () => {
    const texts = ['', 'short', ctx.text, '😀'.repeat(500), 'x'.repeat(10_000), 'word '.repeat(100_000), `${'a'.repeat(31)}😀${'b'.repeat(40)}`];
    for (const text of texts) {
      const parts = pieces(text);
      assert.equal(parts.join(''), text);
      assert.ok(parts.length <= 130, `${parts.length} pieces`);
      for (const part of parts) assert.equal(part, Buffer.from(part, 'utf8').toString('utf8'), 'no lone surrogate');
    }
    assert.ok(pieces(ctx.text).length > 2);
  });
});
