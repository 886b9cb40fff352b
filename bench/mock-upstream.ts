import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';

// The benchmark's upstream: an OpenAI-compatible model server that costs as little as
// possible, so what the bench sees is the target in front of it. Plain requests get a
// fixed ~550-byte chat.completion (prebuilt bytes, optional delay); `"stream":true`
// requests get N chat.completion.chunk events M ms apart, then `data: [DONE]`.
// Run it as its own process: node bench/mock-upstream.ts --port 0 [--delay-ms 0]
//   [--chunks 10] [--chunk-interval-ms 20]; it prints `{"port":N}` on stdout when listening.

export interface MockUpstreamOptions {
  /** Delay before a plain answer (ms); 0 answers as soon as the request body has arrived. */
  delayMs: number;
  /** Number of chunk events in a streamed answer (the last one carries finish_reason). */
  chunks: number;
  /** Gap between chunk events (ms); the first chunk is sent at once. */
  chunkIntervalMs: number;
}

export const DEFAULT_MOCK_OPTIONS: MockUpstreamOptions = { delayMs: 0, chunks: 10, chunkIntervalMs: 20 };

const CREATED = 1_767_225_600;

// Built once: the answer is the same bytes every time, so the mock never serialises.
export const COMPLETION_BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench0000000000000000000000001',
    object: 'chat.completion',
    created: CREATED,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Hello! This is a fixed answer from the aigateway benchmark mock upstream, sized like a short real reply.',
          refusal: null,
          annotations: [],
        },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: {
      prompt_tokens: 14,
      completion_tokens: 22,
      total_tokens: 36,
      completion_tokens_details: { reasoning_tokens: 0 },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_bench00001',
  }),
);

function chunkEvent(index: number, last: boolean): Buffer {
  const chunk = {
    id: 'chatcmpl-bench0000000000000000000000002',
    object: 'chat.completion.chunk',
    created: CREATED,
    model: 'gpt-4o-mini-2024-07-18',
    system_fingerprint: 'fp_bench00001',
    choices: [{ index: 0, delta: index === 0 ? { role: 'assistant', content: '' } : { content: ` tok${index}` }, logprobs: null, finish_reason: last ? 'stop' : null }],
  };
  return Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
}

const DONE_EVENT = Buffer.from('data: [DONE]\n\n');
const JSON_HEADERS = { 'content-type': 'application/json', 'content-length': String(COMPLETION_BODY.length), 'x-request-id': 'req_bench' };
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_bench' };

/** Starts the mock on 127.0.0.1:`port` (0 = any free port). */
export async function startMockUpstream(port: number, options: MockUpstreamOptions = DEFAULT_MOCK_OPTIONS): Promise<Server> {
  const events = Array.from({ length: options.chunks }, (_, index) => chunkEvent(index, index === options.chunks - 1));
  const server = createServer({ keepAliveTimeout: 120_000 }, (request, response) => handle(request, response, options, events));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

function handle(request: IncomingMessage, response: ServerResponse, options: MockUpstreamOptions, events: Buffer[]): void {
  if (request.method !== 'POST') {
    response.writeHead(200, { 'content-type': 'text/plain' }).end('mock upstream ok');
    return;
  }
  const parts: Buffer[] = [];
  request.on('data', (part: Buffer) => parts.push(part));
  request.on('end', () => {
    if (!request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found","type":"invalid_request_error"}}');
      return;
    }
    // A substring test is enough for the bench's own bodies and keeps JSON.parse off the mock.
    if (Buffer.concat(parts).includes('"stream":true')) streamAnswer(response, options, events);
    else if (options.delayMs > 0) setTimeout(() => response.writeHead(200, JSON_HEADERS).end(COMPLETION_BODY), options.delayMs);
    else response.writeHead(200, JSON_HEADERS).end(COMPLETION_BODY);
  });
}

function streamAnswer(response: ServerResponse, options: MockUpstreamOptions, events: Buffer[]): void {
  response.writeHead(200, SSE_HEADERS);
  let next = 0;
  const writeNext = (): void => {
    if (response.destroyed) return;
    const event = events[next++];
    if (event === undefined) {
      response.end(DONE_EVENT);
      return;
    }
    response.write(event);
    // [DONE] follows the last chunk at once; every other chunk waits the interval.
    if (next >= events.length) writeNext();
    else setTimeout(writeNext, options.chunkIntervalMs);
  };
  writeNext();
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      'delay-ms': { type: 'string', default: String(DEFAULT_MOCK_OPTIONS.delayMs) },
      chunks: { type: 'string', default: String(DEFAULT_MOCK_OPTIONS.chunks) },
      'chunk-interval-ms': { type: 'string', default: String(DEFAULT_MOCK_OPTIONS.chunkIntervalMs) },
    },
  });
  const server = await startMockUpstream(Number(values.port), {
    delayMs: Number(values['delay-ms']),
    chunks: Math.max(1, Number(values.chunks)),
    chunkIntervalMs: Number(values['chunk-interval-ms']),
  });
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address !== null ? address.port : 0 })}\n`);
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
}
