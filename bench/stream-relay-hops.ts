// The streamed answer's relay in isolation (issue 32, stream TTFB): an upstream body with its
// first SSE chunk already buffered (as undici has it when the headers resolve), the relay built
// as the gateway builds it (OpenAI usage stage, the gateway's usage chunk stripped), piped into
// a sink like the client's response. Per stream: the time from building the relay to the first
// byte at the sink, and the CPU of the whole stream (20 chunks + [DONE], like the shared
// harness's mock; each arriving on a later turn of the event loop). Variants alternate in rounds, so machine noise hits both alike.
//   node bench/stream-relay-hops.ts [--streams 4000] [--rounds 6]
import { PassThrough, Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { OPENAI_CHAT_INGRESS } from '../proxy/ingress/openai/openai-ingress.ts';
import { FrameRelay } from '../proxy/streams/frame-relay.ts';
import { SseFrameFlow, SseFramePipeline, type SseFrameStage } from '../proxy/streams/sse-frame-pipeline.ts';
import { markdownTable } from './report.ts';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '4000' }, rounds: { type: 'string', default: '6' } } });
const STREAMS = Number(values.streams);
const ROUNDS = Number(values.rounds);

function chunk(index: number, last: boolean): Buffer {
  const delta = index === 0 ? { role: 'assistant', content: '' } : { content: ` tok${index}` };
  const body = { id: 'chatcmpl-mock0000000000000000000000000', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini-2024-07-18', system_fingerprint: 'fp_mock000000', choices: [{ index: 0, delta, logprobs: null, finish_reason: last ? 'stop' : null }], usage: null };
  return Buffer.from(`data: ${JSON.stringify(body)}\n\n`);
}
const CHUNKS = [...Array.from({ length: 20 }, (_, index) => chunk(index, index === 19)), Buffer.from('data: {"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":20,"total_tokens":62}}\n\n'), Buffer.from('data: [DONE]\n\n')];

function stages(): SseFrameStage[] {
  const sink = { streamEvents: 0, onUsage: () => undefined, onDone: () => undefined };
  return [OPENAI_CHAT_INGRESS.usageStage(sink, true)];
}

type Build = (source: Readable) => Readable;
const VARIANTS: Record<string, Build> = {
  // Before: the frame pipeline as a Transform, piped into the error event's PassThrough.
  'Transform + PassThrough': (source) => {
    const pipeline = new SseFramePipeline(stages());
    source.on('error', (error) => pipeline.destroy(error));
    const out = new PassThrough();
    source.pipe(pipeline).pipe(out);
    pipeline.on('error', (error) => out.destroy(error));
    return out;
  },
  'FrameRelay (one hop)': (source) => new FrameRelay(source, new SseFrameFlow(stages()), () => undefined),
};

/** One stream: µs from building the relay to the first byte at the sink; resolves when the sink finished. */
function oneStream(build: Build): Promise<number> {
  return new Promise((resolve, reject) => {
    let next = 1;
    // The rest arrive later, one per turn of the event loop, like network reads.
    const source = new Readable({
      read() {
        setImmediate(() => this.push(next < CHUNKS.length ? CHUNKS[next++] : null));
      },
    });
    source.push(CHUNKS[0]); // buffered before the relay exists
    const started = process.hrtime.bigint();
    let first = 0;
    const sink = new Writable({
      write(_chunk, _encoding, callback) {
        if (first === 0) first = Number(process.hrtime.bigint() - started) / 1e3;
        callback();
      },
    });
    sink.on('finish', () => resolve(first));
    sink.on('error', reject);
    build(source).pipe(sink);
  });
}

const rows = new Map<string, { firstByte: number[]; cpuPerStream: number[] }>();
for (const name of Object.keys(VARIANTS)) rows.set(name, { firstByte: [], cpuPerStream: [] });
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const [name, build] of round % 2 === 0 ? Object.entries(VARIANTS) : Object.entries(VARIANTS).reverse()) {
    const firsts: number[] = [];
    const cpu = process.cpuUsage();
    for (let index = 0; index < STREAMS; index++) firsts.push(await oneStream(build));
    const used = process.cpuUsage(cpu);
    if (round === 0) continue; // warm-up
    const row = rows.get(name) as { firstByte: number[]; cpuPerStream: number[] };
    row.firstByte.push(median(firsts));
    row.cpuPerStream.push((used.user + used.system) / STREAMS);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

process.stdout.write(`\n### Stream relay in isolation (${STREAMS} streams × ${ROUNDS} rounds, 22 chunks each; medians of the rounds)\n\n`);
process.stdout.write(
  `${markdownTable(
    ['relay', 'build → first byte at the sink, µs', 'CPU per stream, µs'],
    [...rows].map(([name, row]) => [name, median(row.firstByte).toFixed(1), median(row.cpuPerStream).toFixed(1)]),
  )}\n`,
);
