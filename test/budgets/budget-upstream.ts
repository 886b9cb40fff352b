// A small upstream for budget tests: OpenAI chat/embeddings and Anthropic messages, plain
// or streamed, answering with the usage the test programs (per request, from the body).
// `hold` streams send their content events and then wait for the client to go away, so a
// test can cut a stream at a known point without timing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Usage {
  readonly prompt: number;
  readonly completion: number;
  readonly cacheRead?: number;
}

export interface BudgetUpstream {
  readonly origin: string;
  /** Requests received, by path. */
  readonly received: string[];
  /** Streams whose client went away before the end. */
  aborted: number;
  close(): Promise<void>;
}

export interface BudgetUpstreamOptions {
  /** The usage to report for a request body (default 10 prompt / 20 completion). */
  usage?: (body: Record<string, unknown>) => Usage;
  /** Content events a stream sends (default 5). */
  events?: number;
}

export async function startBudgetUpstream(options: BudgetUpstreamOptions = {}): Promise<BudgetUpstream> {
  const usageOf = options.usage ?? (() => ({ prompt: 10, completion: 20 }));
  const events = options.events ?? 5;
  const state: BudgetUpstream = { origin: '', received: [], aborted: 0, close: async () => undefined };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      state.received.push(request.url ?? '');
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // answered with defaults
      }
      const usage = usageOf(body);
      const hold = JSON.stringify(body).includes('HOLD-STREAM');
      const stream = body['stream'] === true;
      if (request.url?.endsWith('/messages')) return anthropic(response, body, usage, stream, hold);
      if (request.url?.endsWith('/embeddings')) {
        return json(response, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model: body['model'], usage: { prompt_tokens: usage.prompt, total_tokens: usage.prompt } });
      }
      if (!stream) {
        return json(response, {
          id: 'chatcmpl-b',
          object: 'chat.completion',
          created: 1,
          model: body['model'],
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
        });
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < events; i++) {
        response.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: body['model'], choices: [{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }] })}\n\n`);
      }
      if (hold) {
        response.on('close', () => state.aborted++);
        return;
      }
      response.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: body['model'], choices: [], usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion } })}\n\n`);
      response.end('data: [DONE]\n\n');
    });
  });

  function anthropic(response: http.ServerResponse, body: Record<string, unknown>, usage: Usage, stream: boolean, hold: boolean): void {
    const input = usage.prompt - (usage.cacheRead ?? 0);
    const usageBlock = { input_tokens: input, output_tokens: usage.completion, cache_read_input_tokens: usage.cacheRead ?? 0, cache_creation_input_tokens: 0 };
    const message = { id: 'msg_b', type: 'message', role: 'assistant', model: body['model'], content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: usageBlock };
    if (!stream) return json(response, message);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: Record<string, unknown>): boolean => response.write(`event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`);
    send({ type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usageBlock, output_tokens: 1 } } });
    send({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    for (let i = 0; i < events; i++) send({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `w${i} ` } });
    if (hold) {
      response.on('close', () => state.aborted++);
      return;
    }
    send({ type: 'content_block_stop', index: 0 });
    send({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.completion } });
    send({ type: 'message_stop' });
    response.end();
  }

  function json(response: http.ServerResponse, value: unknown): void {
    const text = JSON.stringify(value);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    response.end(text);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
