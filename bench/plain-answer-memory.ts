// Peak RSS of the gateway while it relays large plain (non-streamed) answers at once: the
// memory bound of issue 25. The gateway runs as in production (the CLI, the bench state); a
// mock upstream answers every request with the same prebuilt JSON of --mib MiB.
//   node bench/plain-answer-memory.ts [--mib 64] [--concurrent 16] [--mode embeddings|guarded]
// embeddings: an OpenAI embeddings answer nothing in the gateway needs to parse;
// guarded: a chat answer with an output guardrail on it (the gateway must parse it).
// Prints the gateway's peak RSS (VmHWM) before and during the burst, and the statuses.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startAigateway } from './targets.ts';

const { values } = parseArgs({
  options: { mib: { type: 'string', default: '64' }, concurrent: { type: 'string', default: '16' }, mode: { type: 'string', default: 'embeddings' } },
});
const size = Number(values.mib) * 1024 * 1024;
const concurrent = Number(values.concurrent);
const mode = values.mode === 'guarded' ? 'guarded' : 'embeddings';

/** A JSON answer of about `bytes`: embedding floats, or one long chat message. */
function answerOf(bytes: number): Buffer {
  const usage = '"usage":{"prompt_tokens":8,"completion_tokens":8,"total_tokens":16}';
  if (mode === 'guarded') {
    const head = '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"';
    const tail = `"}}],${usage}}`;
    return Buffer.from(head + 'lorem ipsum '.repeat(Math.ceil((bytes - head.length - tail.length) / 12)) + tail);
  }
  const head = '{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[';
  const tail = `]}],${usage}}`;
  const count = Math.ceil((bytes - head.length - tail.length) / 21);
  const floats = Array.from({ length: count }, (_, i) => (Math.sin(i) * 0.1).toFixed(18)).join(',');
  return Buffer.from(head + floats + tail);
}

function peakMiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

const answer = answerOf(size);
const mock = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(answer.length) });
    // 64 KiB writes, as a socket delivers them.
    let offset = 0;
    const write = (): void => {
      while (offset < answer.length) {
        const ok = response.write(answer.subarray(offset, offset + 65536));
        offset += 65536;
        if (!ok) return void response.once('drain', write);
      }
      response.end();
    };
    write();
  });
});
await new Promise<void>((resolve) => mock.listen(0, '127.0.0.1', resolve));
const mockOrigin = `http://127.0.0.1:${(mock.address() as { port: number }).port}`;

const workDir = await mkdtemp(join(tmpdir(), 'aigw-plain-memory-'));
const gateway = await startAigateway({ core: undefined, workDir, mockOrigin, routing: 'single' });
const pid = gateway.process.pid;
const idle = peakMiB(pid);
const pool = new Pool(gateway.origin, { connections: concurrent });
const guard = JSON.stringify({ provider: '@mock', output_guardrails: [{ 'default.contains': { words: ['forbidden'], operator: 'none' } }] });
const statuses: Record<string, number> = {};
let relayed = 0;
await Promise.all(
  Array.from({ length: concurrent }, async () => {
    const { statusCode, body } = await pool.request({
      method: 'POST',
      path: mode === 'guarded' ? '/v1/chat/completions' : '/v1/embeddings',
      headers: mode === 'guarded' ? { ...gateway.headers, 'x-gateway-config': guard } : gateway.headers,
      body: JSON.stringify(mode === 'guarded' ? { model: 'm', messages: [{ role: 'user', content: 'hi' }] } : { model: 'm', input: 'hi' }),
    });
    for await (const chunk of body) relayed += (chunk as Buffer).length;
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
  }),
);
const burst = peakMiB(pid);
await pool.close();
await gateway.process.stop();
mock.close();
await rm(workDir, { recursive: true, force: true });
process.stdout.write(
  `| mode | answer | concurrent | statuses | relayed | idle RSS | peak RSS (VmHWM) |\n|---|---:|---:|---|---:|---:|---:|\n` +
    `| ${mode} | ${(answer.length / 1048576).toFixed(1)} MiB | ${concurrent} | ${JSON.stringify(statuses)} | ${(relayed / 1048576).toFixed(0)} MiB | ${idle.rss.toFixed(0)} MiB | ${burst.hwm.toFixed(0)} MiB |\n`,
);
