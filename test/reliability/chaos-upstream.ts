// A chaos upstream on loopback: per request it answers normally, returns 5xx/429, resets
// the connection, stalls before headers or mid-answer, sends malformed JSON or broken SSE,
// truncates the body, or answers slowly — chosen by a seeded generator, counted by kind.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAULTS = ['ok', 'slow', 'status-500', 'status-503', 'status-429', 'reset', 'stall-headers', 'stall-body', 'malformed', 'truncated'] as const;
export type Fault = (typeof FAULTS)[number];

const WEIGHTS: Readonly<Record<Fault, number>> = {
  ok: 40,
  slow: 12,
  'status-500': 8,
  'status-503': 5,
  'status-429': 5,
  reset: 8,
  'stall-headers': 5,
  'stall-body': 5,
  malformed: 7,
  truncated: 5,
};

export interface ChaosUpstream {
  readonly url: string;
  readonly counts: Readonly<Record<Fault, number>>;
  close(): Promise<void>;
}

function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-chaos',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const CHUNK = (content: string) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

export async function startChaosUpstream(seed: number): Promise<ChaosUpstream> {
  const random = seeded(seed);
  const total = FAULTS.reduce((sum, fault) => sum + WEIGHTS[fault], 0);
  const pick = (): Fault => {
    let point = random() * total;
    for (const fault of FAULTS) {
      point -= WEIGHTS[fault];
      if (point < 0) return fault;
    }
    return 'ok';
  };
  const counts = Object.fromEntries(FAULTS.map((fault) => [fault, 0])) as Record<Fault, number>;
  const stalled = new Set<http.ServerResponse>();

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const stream = Buffer.concat(chunks).toString().includes('"stream":true');
      const fault = pick();
      counts[fault]++;
      const json = (status: number, body: string, headers: Record<string, string> = {}) =>
        response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
      const answer = () => {
        if (!stream) return json(200, COMPLETION);
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(CHUNK('o'));
        response.end(`${CHUNK('k')}data: [DONE]\n\n`);
      };
      switch (fault) {
        case 'ok':
          return answer();
        case 'slow':
          return void setTimeout(answer, 20 + Math.floor(random() * 80));
        case 'status-500':
          return json(500, '{"error":{"message":"chaos 500","type":"server_error"}}');
        case 'status-503':
          return json(503, 'service unavailable', { 'content-type': 'text/plain' });
        case 'status-429':
          return json(429, '{"error":{"message":"slow down","type":"rate_limit_error"}}', { 'retry-after-ms': '5' });
        case 'reset':
          return void request.socket.destroy();
        case 'stall-headers':
          stalled.add(response);
          return;
        case 'stall-body':
          stalled.add(response);
          if (stream) {
            response.writeHead(200, { 'content-type': 'text/event-stream' });
            response.write(CHUNK('o'));
          } else {
            response.writeHead(200, { 'content-type': 'application/json' });
            response.write(COMPLETION.slice(0, 20));
          }
          return;
        case 'malformed':
          if (!stream) return json(200, '{"id": "broken", "choices": [');
          response.writeHead(200, { 'content-type': 'text/event-stream' });
          return void response.end('data: {not json\n\nevent without data\n\n');
        case 'truncated':
          response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(COMPLETION.length + 50) });
          response.write(COMPLETION.slice(0, 30));
          return void setImmediate(() => request.socket.destroy());
      }
    });
  });
  server.on('connection', (socket) => socket.on('error', () => undefined));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    counts,
    async close() {
      for (const response of stalled) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
