// A /v1/messages stream assembled for the cache must be the Message Anthropic would have
// answered plainly, and a stored Message replayed as events must read, through the official
// @anthropic-ai/sdk stream accumulator, exactly like the Message itself.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { MessagesStreamAssembler } from '../../../proxy/cache/messages-stream-assembler.ts';
import { replayMessageAsSse } from '../../../proxy/cache/messages-stream-replay.ts';
import { anthropicSseFrame, mockClaudeAnswer } from '../../fixtures/mock-anthropic.ts';

type Json = Record<string, unknown>;

const TOOL = { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };
const textAnswer = mockClaudeAnswer(
  { model: 'claude-sonnet-4-6', max_tokens: 256, messages: [{ role: 'user', content: 'Hi' }] },
  { id: 'msg_text', model: 'claude-sonnet-4-6', text: 'A longer answer, so that it is cut into several pieces on its way out of the cache — 😀 included. '.repeat(3) },
);
const toolAnswer = mockClaudeAnswer(
  { model: 'claude-sonnet-4-6', max_tokens: 256, tools: [TOOL], messages: [{ role: 'user', content: 'Weather?' }] },
  { id: 'msg_tool', model: 'claude-sonnet-4-6', toolInput: { city: 'Paris', detail: 'x'.repeat(120) } },
);
const thinkingMessage: Json = {
  id: 'msg_think',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-6',
  content: [
    { type: 'thinking', thinking: 'Let me think about this carefully. '.repeat(4), signature: 'sig-abc123' },
    { type: 'redacted_thinking', data: 'opaque-bytes' },
    { type: 'text', text: 'Paris.', citations: [{ type: 'char_location', cited_text: 'Paris', document_index: 0, start_char_index: 0, end_char_index: 5 }] },
  ],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 40, cache_creation_input_tokens: 3, cache_read_input_tokens: 5 },
};

function assemble(sse: string, chunkSize = 7): Json | undefined {
  const assembler = new MessagesStreamAssembler();
  for (let at = 0; at < sse.length; at += chunkSize) assembler.push(sse.slice(at, at + chunkSize));
  return assembler.result();
}

/** The SDK's own stream reader and accumulator over the replayed text. */
async function readWithSdk(sse: string): Promise<{ final: unknown; types: string[] }> {
  const client = new Anthropic({
    apiKey: 'unused',
    maxRetries: 0,
    fetch: async () => new Response(sse, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = client.messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 256, messages: [{ role: 'user', content: 'Hi' }] });
  const types: string[] = [];
  stream.on('streamEvent', (event) => types.push(event.type));
  // The SDK adds its own members (parsed_output, stop_details); the wire fields are compared.
  const { parsed_output: _parsed, ...final } = JSON.parse(JSON.stringify(await stream.finalMessage())) as Json;
  return { final, types };
}

describe('MessagesStreamAssembler', () => {
  test("a mock Claude stream (text; text then tool_use with input_json_delta) assembles to the plain Message", () => {
    for (const { message, events } of [textAnswer, toolAnswer]) {
      assert.deepEqual(assemble(events.map(anthropicSseFrame).join('')), message);
    }
  });

  test('incomplete or failed streams give nothing to store', () => {
    const frames = toolAnswer.events.map(anthropicSseFrame);
    assert.equal(assemble(frames.slice(0, -1).join('')), undefined, 'no message_stop');
    assert.equal(assemble([...frames.slice(0, 3), 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'].join('')), undefined);
    const unknownDelta = frames.join('').replace('"type":"input_json_delta"', '"type":"future_delta"');
    assert.equal(assemble(unknownDelta), undefined, 'an unknown delta would be lost');
    const brokenJson = toolAnswer.events
      .map((event) => (event['type'] === 'content_block_delta' && (event['delta'] as Json)['type'] === 'input_json_delta' ? { ...event, delta: { type: 'input_json_delta', partial_json: '{"city"' } } : event))
      .map(anthropicSseFrame)
      .join('');
    assert.equal(assemble(brokenJson), undefined, 'tool input that does not parse');
    const small = new MessagesStreamAssembler({ maxBytes: 100 });
    small.push(frames.join(''));
    assert.equal(small.result(), undefined, 'over maxBytes');
  });
});

describe('replayMessageAsSse', () => {
  test('round trip: replayed events assemble back to the stored Message (text, tool_use, thinking, citations, redacted blocks)', () => {
    for (const message of [textAnswer.message, toolAnswer.message, thinkingMessage]) {
      const sse = replayMessageAsSse(message);
      assert.ok(sse !== undefined);
      assert.deepEqual(assemble(sse, 13), message);
    }
  });

  test('the official SDK reads a replay as a live stream: same final Message, events in Anthropic order', async () => {
    const sse = replayMessageAsSse(toolAnswer.message) as string;
    const { final, types } = await readWithSdk(sse);
    assert.deepEqual(final, toolAnswer.message);
    assert.deepEqual([types[0], types[1], types.at(-2), types.at(-1)], ['message_start', 'content_block_start', 'message_delta', 'message_stop']);
    assert.ok(types.filter((type) => type === 'content_block_delta').length > 2, 'text and tool input come in pieces');
    assert.deepEqual((await readWithSdk(replayMessageAsSse(thinkingMessage) as string)).final, thinkingMessage);
  });

  test('what is not a Message is not replayed (the request then goes to the provider)', () => {
    assert.equal(replayMessageAsSse({ object: 'chat.completion', choices: [] }), undefined);
    assert.equal(replayMessageAsSse({ type: 'message', content: 'text' }), undefined);
    assert.equal(replayMessageAsSse(null), undefined);
  });
});
