import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StreamAssembler } from '../../../proxy/cache/stream-assembler.ts';
import type { InferenceEndpoint } from '../../../proxy/openai/inference-endpoint.ts';
import {
  chatCompletion,
  chatCompletionChunks,
  sseData,
  textCompletion,
  textCompletionChunks,
  type BuildContext,
  type JsonObject,
} from '../../fixtures/mock-openai-payloads.ts';

const ctx: BuildContext = {
  id: 'chatcmpl-abc123',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  text: 'Hello there — a cached answer with ünïcödé and emoji 😀🎉, spread over several chunks.',
  promptTokens: 12,
};

const sse = (chunks: JsonObject[], done = true): string => chunks.map((c) => sseData(c)).join('') + (done ? sseData('[DONE]') : '');

function assemble(endpoint: InferenceEndpoint, stream: string | Buffer, pieceBytes?: number): JsonObject | undefined {
  const assembler = new StreamAssembler(endpoint);
  const bytes = Buffer.isBuffer(stream) ? stream : Buffer.from(stream, 'utf8');
  if (pieceBytes === undefined) assembler.push(bytes);
  else for (let i = 0; i < bytes.length; i += pieceBytes) assembler.push(bytes.subarray(i, i + pieceBytes));
  return assembler.result();
}

function withoutUsage(answer: JsonObject): JsonObject {
  const { usage: _usage, ...rest } = answer;
  return rest;
}

const toolCallChunks = (): JsonObject[] => {
  const base = { id: 'chatcmpl-tools', object: 'chat.completion.chunk', created: 1_700_000_001, model: 'gpt-4o-mini', system_fingerprint: 'fp_1' };
  const choice = (delta: JsonObject, finish: string | null = null): JsonObject => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  return [
    choice({ role: 'assistant', content: null, refusal: null }),
    choice({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    choice({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
    choice({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    choice({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"CET"}' } }] }),
    choice({}, 'tool_calls'),
  ];
};

describe('stream assembler', () => {
  test('a chat stream with usage assembles into exactly the non-streaming answer', () => {
    assert.deepEqual(assemble('chat.completions', sse(chatCompletionChunks(ctx, true))), chatCompletion(ctx));
  });

  test('without include_usage the answer is the same, minus usage', () => {
    assert.deepEqual(assemble('chat.completions', sse(chatCompletionChunks(ctx, false))), withoutUsage(chatCompletion(ctx)));
  });

  test('frames split anywhere — down to single bytes inside multi-byte characters — assemble the same', () => {
    const stream = sse(chatCompletionChunks(ctx, true));
    for (const size of [1, 3, 7, 64, 1000]) {
      assert.deepEqual(assemble('chat.completions', stream, size), chatCompletion(ctx), `pieces of ${size} bytes`);
    }
  });

  test('CRLF framing and keep-alive comments are fine', () => {
    const stream = `: keep-alive\r\n\r\n${sse(chatCompletionChunks(ctx, true)).replaceAll('\n', '\r\n')}`;
    assert.deepEqual(assemble('chat.completions', stream, 5), chatCompletion(ctx));
  });

  test('text completions with several choices assemble per choice', () => {
    assert.deepEqual(assemble('completions', sse(textCompletionChunks(ctx, 3, true)), 11), textCompletion(ctx, 3));
  });

  test('tool calls are gathered by index: id and name once, arguments concatenated', () => {
    const answer = assemble('chat.completions', sse(toolCallChunks()), 9);
    assert.deepEqual(answer, {
      id: 'chatcmpl-tools',
      object: 'chat.completion',
      created: 1_700_000_001,
      model: 'gpt-4o-mini',
      system_fingerprint: 'fp_1',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            refusal: null,
            annotations: [],
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"CET"}' } },
            ],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
    });
  });

  test('interleaved choices, logprobs and unknown delta fields merge', () => {
    const base = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm' };
    const chunk = (index: number, delta: JsonObject, finish: string | null = null, logprobs: unknown = null): JsonObject => ({
      ...base,
      choices: [{ index, delta, logprobs, finish_reason: finish }],
    });
    const lp = (token: string): JsonObject => ({ content: [{ token, logprob: -0.5, bytes: null, top_logprobs: [] }], refusal: null });
    const answer = assemble(
      'chat.completions',
      sse([
        chunk(1, { role: 'assistant', content: '' }),
        chunk(0, { role: 'assistant', content: '', reasoning_content: 'Think' }),
        chunk(0, { content: 'A', reasoning_content: 'ing.' }, null, lp('A')),
        chunk(1, { content: 'B' }, null, lp('B')),
        chunk(0, { content: 'a' }, null, lp('a')),
        chunk(1, {}, 'length'),
        chunk(0, {}, 'stop'),
      ]),
    );
    const choices = answer?.['choices'] as JsonObject[];
    assert.deepEqual(choices.map((c) => [c['index'], (c['message'] as JsonObject)['content'], c['finish_reason']]), [[0, 'Aa', 'stop'], [1, 'B', 'length']]);
    assert.equal((choices[0]?.['message'] as JsonObject)['reasoning_content'], 'Thinking.');
    assert.deepEqual(((choices[0]?.['logprobs'] as JsonObject)['content'] as JsonObject[]).map((t) => t['token']), ['A', 'a']);
  });

  test('an incomplete or failed stream gives undefined', () => {
    const chunks = chatCompletionChunks(ctx, true);
    const cases: Record<string, string> = {
      'no [DONE]': sse(chunks, false),
      'cut mid-frame': sse(chunks).slice(0, 200),
      'an error payload': sse([chunks[0]!, { error: { message: 'overloaded', type: 'server_error' } }, ...chunks.slice(1)]),
      'an error event': `${sse(chunks.slice(0, 2), false)}event: error\ndata: {"message":"boom"}\n\n${sse(chunks.slice(2))}`,
      'invalid JSON': `${sse(chunks.slice(0, 2), false)}data: {"choices": [\n\n${sse(chunks.slice(2))}`,
      'no finish_reason': sse(chunks.filter((c) => ((c['choices'] as JsonObject[])[0]?.['finish_reason'] ?? null) === null)),
      'no chunks at all': sseData('[DONE]'),
      'not a completion chunk': sse([{ type: 'response.created' }]),
    };
    for (const [what, stream] of Object.entries(cases)) assert.equal(assemble('chat.completions', stream), undefined, what);
  });

  test('frames after [DONE] are ignored', () => {
    const stream = `${sse(chatCompletionChunks(ctx, true))}data: {"error":{"message":"late"}}\n\n`;
    assert.deepEqual(assemble('chat.completions', stream), chatCompletion(ctx));
  });

  test('a stream over maxBytes stops being collected and gives undefined', () => {
    const assembler = new StreamAssembler('chat.completions', { maxBytes: 500 });
    assembler.push(sse(chatCompletionChunks(ctx, true)));
    assert.equal(assembler.result(), undefined);
  });

  test('embeddings and responses are never assembled', () => {
    assert.equal(assemble('embeddings', sse(chatCompletionChunks(ctx, true))), undefined);
    assert.equal(assemble('responses', sse(chatCompletionChunks(ctx, true))), undefined);
  });
});
