// Replays a cached Anthropic Message to a /v1/messages `stream: true` request as the events
// Anthropic would have sent — pure: JSON in, SSE text out. messages-stream-assembler.ts is
// the inverse; the tests hold the two to a round trip.
//
//   message_start  (the Message without content, stop_reason null, usage with output 0)
//   ping
//   per block: content_block_start, its deltas, content_block_stop
//     text       text_delta in a few pieces (citations ride on the start block)
//     thinking   thinking_delta pieces, then signature_delta
//     *tool_use  input_json_delta: the input's JSON in pieces
//     others     (redacted_thinking, server tool results…) whole on the start block
//   message_delta  (stop_reason, stop_sequence, the whole usage: Anthropic's is cumulative)
//   message_stop

import { pieces } from './stream-replay.ts';

type Json = Record<string, unknown>;

/** The SSE events equivalent to a stored Message, or undefined when it is not one. */
export function replayMessageAsSse(answer: unknown): string | undefined {
  if (!isRecord(answer) || answer['type'] !== 'message' || !Array.isArray(answer['content'])) return undefined;
  const blocks = answer['content'];
  if (!blocks.every(isRecord)) return undefined;
  const usage = isRecord(answer['usage']) ? answer['usage'] : {};
  let sse = event('message_start', {
    type: 'message_start',
    message: { ...answer, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 0 } },
  });
  sse += event('ping', { type: 'ping' });
  for (const [index, block] of (blocks as Json[]).entries()) sse += blockEvents(index, block);
  sse += event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: answer['stop_reason'] ?? 'end_turn', stop_sequence: answer['stop_sequence'] ?? null },
    usage,
  });
  return sse + event('message_stop', { type: 'message_stop' });
}

function blockEvents(index: number, block: Json): string {
  const start = (contentBlock: Json): string => event('content_block_start', { type: 'content_block_start', index, content_block: contentBlock });
  const delta = (payload: Json): string => event('content_block_delta', { type: 'content_block_delta', index, delta: payload });
  const stop = event('content_block_stop', { type: 'content_block_stop', index });
  const type = block['type'];
  if (type === 'text' && typeof block['text'] === 'string') {
    let out = start({ ...block, text: '' });
    for (const piece of pieces(block['text'])) out += delta({ type: 'text_delta', text: piece });
    return out + stop;
  }
  if (type === 'thinking' && typeof block['thinking'] === 'string') {
    let out = start({ ...block, thinking: '', signature: '' });
    for (const piece of pieces(block['thinking'])) out += delta({ type: 'thinking_delta', thinking: piece });
    if (typeof block['signature'] === 'string' && block['signature'] !== '') out += delta({ type: 'signature_delta', signature: block['signature'] });
    return out + stop;
  }
  if (typeof type === 'string' && type.endsWith('tool_use') && isRecord(block['input'])) {
    let out = start({ ...block, input: {} });
    for (const piece of pieces(JSON.stringify(block['input']))) out += delta({ type: 'input_json_delta', partial_json: piece });
    return out + stop;
  }
  return start(block) + stop;
}

function event(name: string, payload: Json): string {
  return `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
