// Usage is read in one place per client protocol: each ingress translator's usage stage
// tells the relay's sink the answer's usage once, whole, and the plain reading agrees.
import assert from 'node:assert/strict';
import { finished } from 'node:stream/promises';
import { describe, test } from 'node:test';
import { MessagesIngress } from '../../../proxy/ingress/anthropic-messages/messages-ingress.ts';
import { ingressFor } from '../../../proxy/ingress/client-protocols.ts';
import type { IngressTranslator } from '../../../proxy/ingress/ingress-translator.ts';
import type { AnswerUsage, UsageTapSink } from '../../../proxy/ratelimit/usage-tap.ts';
import { SseFramePipeline } from '../../../proxy/streams/sse-frame-pipeline.ts';
import { anthropicSseFrame } from '../../fixtures/mock-anthropic.ts';
import { splitBytes } from '../providers/golden-runner.ts';

interface Told {
  readonly usages: Array<{ usage: AnswerUsage; model: string | undefined }>;
  done: number;
  sink: UsageTapSink;
}

function sink(): Told {
  const told: Told = { usages: [], done: 0, sink: undefined as unknown as UsageTapSink };
  told.sink = {
    streamEvents: 0,
    onUsage: (usage, model) => told.usages.push({ usage, model }),
    onDone: () => told.done++,
  };
  return told;
}

/** Runs `text` through a frame pipeline whose one stage is the ingress's usage stage; returns what came out. */
async function run(ingress: IngressTranslator, told: Told, text: string, pieceBytes: number): Promise<string> {
  const pipeline = new SseFramePipeline([ingress.usageStage(told.sink, false)]);
  let out = '';
  pipeline.on('data', (chunk: Buffer | string) => (out += chunk.toString()));
  for (const piece of splitBytes(Buffer.from(text), pieceBytes)) pipeline.write(piece);
  pipeline.end();
  await finished(pipeline);
  return out;
}

const anthropicStream = [
  { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x-20261001', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 11, cache_creation_input_tokens: 7, cache_read_input_tokens: 5, output_tokens: 1 } } },
  { type: 'ping' },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 9 } },
  { type: 'message_stop' },
]
  .map(anthropicSseFrame)
  .join('');

const exact: AnswerUsage = { prompt: 23, completion: 9, total: 32, cachedPrompt: 5, cacheWrite: 7 };

describe('Messages ingress: usage read once', () => {
  for (const piece of [anthropicStream.length, 7, 1]) {
    test(`a stream tells its usage once, whole (message_start's input and cache tokens, message_delta's output), in ${piece}-byte pieces`, async () => {
      const told = sink();
      const out = await run(new MessagesIngress('messages'), told, anthropicStream, piece);
      assert.equal(out, anthropicStream, 'the stage never changes a byte');
      assert.deepEqual(told.usages, [{ usage: exact, model: 'claude-x-20261001' }]);
      assert.equal(told.done, 1, 'message_stop ends a whole answer');
      assert.equal(told.sink.streamEvents, 2, 'content deltas are counted for the estimate');
    });
  }

  test('a stream cut before message_stop tells what it saw, once, at its end', async () => {
    const told = sink();
    const cut = anthropicStream.slice(0, anthropicStream.indexOf('event: content_block_stop'));
    await run(new MessagesIngress('messages'), told, cut, 64);
    assert.equal(told.usages.length, 1);
    assert.deepEqual(told.usages[0]?.usage, { prompt: 23, completion: 1, total: 24, cachedPrompt: 5, cacheWrite: 7 });
    assert.equal(told.done, 0);
  });

  test('a plain Message reads the same way', () => {
    const message = { type: 'message', model: 'claude-x', usage: { input_tokens: 11, cache_creation_input_tokens: 7, cache_read_input_tokens: 5, output_tokens: 9 } };
    assert.deepEqual(new MessagesIngress('messages').answerUsage(message), exact);
    assert.equal(new MessagesIngress('messages').answerUsage({ type: 'message' }), undefined);
  });
});

describe('OpenAI ingress: usage read once', () => {
  const chunk = (body: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-x', ...body })}\n\n`;
  const stream =
    chunk({ choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] }) +
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
    chunk({ choices: [], usage: { prompt_tokens: 13, completion_tokens: 4, total_tokens: 17 } }) +
    'data: [DONE]\n\n';

  test('chat: one usage, from the usage chunk; [DONE] ends the answer', async () => {
    const told = sink();
    await run(ingressFor('chat.completions'), told, stream, 5);
    assert.deepEqual(told.usages, [{ usage: { prompt: 13, completion: 4, total: 17 }, model: 'gpt-x' }]);
    assert.equal(told.done, 1);
  });

  test('the OpenAI-shaped translators hold nothing per request (shared, no allocation)', () => {
    assert.equal(ingressFor('chat.completions'), ingressFor('completions'));
    assert.equal(ingressFor('responses'), ingressFor('responses'));
    assert.notEqual(ingressFor('messages'), ingressFor('messages'));
    assert.equal(ingressFor('chat.completions').asksStreamUsage, true);
    assert.equal(ingressFor('responses').asksStreamUsage, false, 'Responses streams report usage unasked');
  });
});
