// Claude on Bedrock, streamed: InvokeModelWithResponseStream's binary `chunk` events carry
// Anthropic's events base64-encoded; they come out as Anthropic's SSE, byte for byte the
// event JSON, however the bytes are split; exceptions become Anthropic error events.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BedrockInvokeTranslator, bedrockInvokeBody } from '../../../proxy/providers/bedrock/bedrock-invoke-claude.ts';
import { CLIENT_ANTHROPIC_HEADERS } from '../../../proxy/providers/anthropic/anthropic-wire.ts';
import { converseException, encodeEventStreamMessage } from '../../fixtures/mock-bedrock-event-stream.ts';
import { runStreamTranslator, splitBytes } from '../providers/golden-runner.ts';

function chunkEvent(event: Record<string, unknown>): Buffer {
  const bytes = Buffer.from(JSON.stringify(event)).toString('base64');
  return encodeEventStreamMessage({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }, Buffer.from(JSON.stringify({ bytes })));
}

const EVENTS = [
  { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Grüße ✓' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } },
  { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 5, outputTokenCount: 3 } },
];

describe('BedrockInvokeTranslator', () => {
  const whole = Buffer.concat(EVENTS.map(chunkEvent));
  const expected = EVENTS.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join('');
  for (const [how, chunks] of [
    ['whole', [whole]],
    ['7-byte pieces', splitBytes(whole, 7)],
    ['byte by byte', splitBytes(whole, 1)],
  ] as const) {
    test(`unwraps every chunk event unchanged (${how})`, async () => {
      assert.equal(runStreamTranslator(new BedrockInvokeTranslator(), [...chunks]), expected);
    });
  }

  test('a mid-stream exception ends the stream with an Anthropic error event', async () => {
    const bytes = Buffer.concat([chunkEvent(EVENTS[0] as Record<string, unknown>), converseException('throttlingException', 'Too many tokens'), chunkEvent(EVENTS[5] as Record<string, unknown>)]);
    const out = runStreamTranslator(new BedrockInvokeTranslator(), [bytes]);
    assert.ok(out.endsWith(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Too many tokens' } })}\n\n`));
    assert.ok(!out.includes('message_stop'));
  });

  test('a stream cut inside a message ends with an error event', async () => {
    const out = runStreamTranslator(new BedrockInvokeTranslator(), [whole.subarray(0, whole.length - 5)]);
    assert.match(out, /event: error\ndata: .*ended inside an event-stream message/);
  });
});

describe('bedrockInvokeBody', () => {
  test('drops model and stream, adds the version and the client betas; count_tokens wraps the body', () => {
    const body = { model: 'anthropic.claude-x', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }], [CLIENT_ANTHROPIC_HEADERS]: { version: '2023-06-01', betas: ['a', 'b'] } };
    assert.deepEqual(bedrockInvokeBody('messages', body), { anthropic_version: 'bedrock-2023-05-31', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }], anthropic_beta: ['a', 'b'] });
    const counted = bedrockInvokeBody('messages.count_tokens', { model: 'm', messages: [{ role: 'user', content: 'Hi' }] }) as { input: { invokeModel: { body: string } } };
    assert.deepEqual(JSON.parse(counted.input.invokeModel.body), { max_tokens: 1, anthropic_version: 'bedrock-2023-05-31', messages: [{ role: 'user', content: 'Hi' }] });
  });
});
