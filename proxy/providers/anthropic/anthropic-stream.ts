import { addAnthropicUsage, anthropicErrorBody, emptyUsageTotals, finishReasonOf, openAIUsageOf } from './anthropic-response.ts';
import { isRecord } from './anthropic-wire.ts';
import { chatCompletionChunk, nowSeconds, type ChatChunkDelta } from '../openai/openai-shapes.ts';
import { DONE_FRAME, SseEventTranslator, SseFrame, type SseFrameSource } from '../sse-parser.ts';

// Anthropic's Messages stream (named SSE events) → OpenAI chat.completion.chunk frames,
// event by event as bytes arrive; nothing is buffered beyond one incomplete SSE line. Each
// upstream event is parsed once (frame.json); the frames built here carry their JSON.
//
//   message_start                      → first chunk: { role: 'assistant', content: '' }
//   content_block_start (tool_use)     → tool_calls[i] with id, name, arguments ''
//   content_block_delta text_delta     → { content }
//   content_block_delta input_json_delta → tool_calls[i].function.arguments fragment
//   message_delta                      → final chunk with finish_reason (usage is kept)
//   message_stop                       → usage chunk (stream_options.include_usage), then [DONE]
//   error                              → data: {"error":{…}} and the stream ends (no [DONE])
//   ping, content_block_stop, thinking deltas → nothing

export function createAnthropicStreamTranslator(request: Record<string, unknown>, provider = 'anthropic'): SseFrameSource {
  const streamOptions = request['stream_options'];
  const includeUsage = isRecord(streamOptions) && streamOptions['include_usage'] === true;
  const created = nowSeconds();
  const usage = emptyUsageTotals();
  // OpenAI numbers tool calls 0, 1, …; Anthropic numbers all content blocks.
  const toolIndexByBlock = new Map<number, number>();
  let id = 'msg_unknown';
  let model = String(request['model']);
  let finished = false;

  const chunk = (delta: ChatChunkDelta | undefined, finishReason: string | null = null): SseFrame[] => [
    SseFrame.of(chatCompletionChunk(id, model, created, delta, finishReason)),
  ];

  function translate(event: SseFrame): SseFrame[] {
    const data = event.json;
    if (!isRecord(data)) return []; // not JSON: nothing a chat client could use
    switch (event.event ?? data['type']) {
      case 'message_start': {
        const message = data['message'];
        if (isRecord(message)) {
          if (typeof message['id'] === 'string') id = message['id'];
          if (typeof message['model'] === 'string') model = message['model'];
          addAnthropicUsage(usage, message['usage']);
        }
        return chunk({ role: 'assistant', content: '' });
      }
      case 'content_block_start':
        return blockStart(data);
      case 'content_block_delta':
        return blockDelta(data);
      case 'message_delta': {
        addAnthropicUsage(usage, data['usage']);
        const delta = data['delta'];
        const reason = isRecord(delta) ? finishReasonOf(delta['stop_reason']) : null;
        return reason === null ? [] : chunk({}, reason);
      }
      case 'message_stop': {
        finished = true;
        const usageChunk = includeUsage ? [SseFrame.of(chatCompletionChunk(id, model, created, undefined, null, openAIUsageOf(usage)))] : [];
        return [...usageChunk, DONE_FRAME];
      }
      case 'error': {
        finished = true;
        const body = anthropicErrorBody(data['error'], provider) ?? {
          error: { message: 'anthropic stream failed', type: 'api_error', param: null, code: null, provider },
        };
        return [SseFrame.of(body)];
      }
      default:
        return [];
    }
  }

  function blockStart(data: Record<string, unknown>): SseFrame[] {
    const block = data['content_block'];
    const index = data['index'];
    if (!isRecord(block) || typeof index !== 'number') return [];
    if (block['type'] === 'text' && typeof block['text'] === 'string' && block['text'] !== '') {
      return chunk({ content: block['text'] });
    }
    if (block['type'] !== 'tool_use') return [];
    const toolIndex = toolIndexByBlock.size;
    toolIndexByBlock.set(index, toolIndex);
    return chunk({
      tool_calls: [
        { index: toolIndex, id: String(block['id']), type: 'function', function: { name: String(block['name']), arguments: '' } },
      ],
    });
  }

  function blockDelta(data: Record<string, unknown>): SseFrame[] {
    const delta = data['delta'];
    if (!isRecord(delta)) return [];
    if (delta['type'] === 'text_delta' && typeof delta['text'] === 'string') return chunk({ content: delta['text'] });
    if (delta['type'] !== 'input_json_delta' || typeof delta['partial_json'] !== 'string' || delta['partial_json'] === '') {
      return [];
    }
    const toolIndex = typeof data['index'] === 'number' ? toolIndexByBlock.get(data['index']) : undefined;
    if (toolIndex === undefined) return [];
    return chunk({ tool_calls: [{ index: toolIndex, function: { arguments: delta['partial_json'] } }] });
  }

  return new SseEventTranslator({
    event(frame, out) {
      if (!finished) out.push(...translate(frame));
    },
  });
}
