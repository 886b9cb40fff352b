// `npx node bench/plain-write.ts [--rounds 30]`: main-thread CPU per plain answer written by
// reply.send against sendPlain (proxy/endpoints/plain-write.ts), the harness's head (seven
// headers, a 555-byte JSON body) on one keep-alive socket, client in the same thread (its
// cost is the same for both). Blocks of 2,000 requests alternate; min, p25 and median of the
// blocks are printed (a shared machine moves single blocks, not the order of the two).
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import Fastify, { type FastifyReply } from 'fastify';
import { sendPlain } from '../proxy/endpoints/plain-write.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '30' } } });
const BODY = Buffer.alloc(555, 0x61);
const BLOCK = 2_000;

function head(reply: FastifyReply): void {
  reply.header('x-gateway-trace-id', '01a21c94-6871-7a2c-aa19-b2c7565796f5');
  reply.header('x-gateway-cache-status', 'DISABLED');
  reply.header('x-gateway-provider', 'openai');
  reply.header('x-gateway-last-used-option-index', 'config.targets[0]');
  reply.header('x-gateway-retry-attempt-count', '0');
  reply.headers({ 'content-type': 'application/json', 'x-request-id': 'req_bench' });
  reply.code(200);
}

const app = Fastify();
app.post('/send', async (_request, reply) => {
  head(reply);
  reply.send(BODY);
});
app.post('/plain', async (_request, reply) => {
  head(reply);
  sendPlain(reply, BODY);
});
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const socket = connect(typeof address === 'object' && address !== null ? address.port : 0, '127.0.0.1');
await new Promise((resolve) => socket.once('connect', resolve));
const requestOf = (path: string): Buffer => Buffer.from(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`);
const REQUESTS: Record<string, Buffer> = { '/send': requestOf('/send'), '/plain': requestOf('/plain') };

// Each answer is the same size (Date has a fixed width): the first one says how many bytes.
let answerBytes = 0;
let seen = 0;
let waiting: (() => void) | undefined;
socket.on('data', (chunk: Buffer) => {
  seen += chunk.length;
  if (answerBytes === 0) {
    const text = chunk.toString('latin1');
    const end = text.indexOf('\r\n\r\n');
    if (end === -1) throw new Error('answer head split across reads');
    answerBytes = end + 4 + BODY.length;
  }
  if (seen < answerBytes) return;
  seen -= answerBytes;
  const done = waiting;
  waiting = undefined;
  done?.();
});
const one = (path: string): Promise<void> =>
  new Promise((resolve) => {
    waiting = resolve;
    socket.write(REQUESTS[path] as Buffer);
  });
const run = async (path: string, count: number): Promise<void> => {
  for (let index = 0; index < count; index++) await one(path);
};

await run('/send', 5_000);
await run('/plain', 5_000);
const blocks: Record<string, number[]> = { '/send': [], '/plain': [] };
for (let round = 0; round < Number(values.rounds); round++) {
  for (const path of round % 2 === 0 ? ['/plain', '/send'] : ['/send', '/plain']) {
    const start = process.threadCpuUsage();
    await run(path, BLOCK);
    const used = process.threadCpuUsage(start);
    blocks[path]?.push((used.user + used.system) / BLOCK);
  }
}
for (const [path, list] of Object.entries(blocks)) {
  const sorted = [...list].sort((a, b) => a - b);
  const at = (share: number): string => (sorted[Math.floor(sorted.length * share)] as number).toFixed(2);
  process.stdout.write(`${path.padEnd(7)} µs/request (server + client): min ${at(0)} p25 ${at(0.25)} median ${at(0.5)}\n`);
}
socket.destroy();
await app.close();
