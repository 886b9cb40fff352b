// Finding 5: one huge SSE event from an upstream. The gateway must not buffer it whole nor
// rescan it on every chunk: the event is cut at MAX_SSE_EVENT_BYTES, the client gets an
// OpenAI-shaped error event, the upstream request is aborted, and /health keeps answering.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { APIError } from 'openai';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const ATTACK_BYTES = 50 * 1024 * 1024;
const WRITE_BYTES = 64 * 1024;

/** An OpenAI-style SSE upstream whose second event never ends (50 MB of content). */
interface HugeEventUpstream {
  readonly url: string;
  /** Bytes of the huge event written so far. */
  written: number;
  closedEarly: boolean;
  started: Promise<void>;
  close(): Promise<void>;
}

async function startHugeEventUpstream(): Promise<HugeEventUpstream> {
  let markStarted: () => void = () => undefined;
  const state: HugeEventUpstream = {
    url: '',
    written: 0,
    closedEarly: false,
    started: new Promise((resolve) => (markStarted = resolve)),
    close: async () => undefined,
  };
  const server = http.createServer((request, response) => {
    request.resume();
    request.once('end', () => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const first = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
      response.write(`data: ${JSON.stringify(first)}\n\n`);
      response.write('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"');
      const piece = Buffer.alloc(WRITE_BYTES, 'a');
      let done = false;
      response.once('close', () => {
        if (!done) state.closedEarly = true;
        done = true;
      });
      const pump = (): void => {
        while (!done && state.written < ATTACK_BYTES) {
          state.written += piece.length;
          if (state.written >= 1024 * 1024) markStarted();
          if (!response.write(piece)) {
            response.once('drain', pump);
            return;
          }
        }
        if (!done) {
          done = true;
          response.end('"}}]}\n\ndata: [DONE]\n\n');
        }
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

describe('an upstream SSE event over the cap', () => {
  let upstream: HugeEventUpstream;
  let harness: Harness;
  before(async () => {
    upstream = await startHugeEventUpstream();
    harness = await startHarness({ state: baseState() });
  });
  after(async () => {
    await upstream.close();
    await harness.close();
  });

  test('ends the stream with an error event, aborts the upstream, and /health keeps answering', { timeout: 20_000 }, async () => {
    const client = harness.client({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': upstream.url });
    const consumed = (async () => {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
      const chunks: unknown[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    })();
    consumed.catch(() => undefined);

    // While the upstream is pushing the huge event, the gateway still answers its probes.
    await upstream.started;
    await eventually(
      async () => {
        const health = await fetch(`${harness.gateway.origin}/health`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
        return health?.status === 200;
      },
      '/health to answer during the attack',
      { timeoutMs: 10_000 },
    );

    await assert.rejects(consumed, (error: unknown) => {
      assert.ok(error instanceof APIError, `expected an APIError, got ${String(error)}`);
      assert.match(error.message, /stream event larger than \d+ bytes/);
      return true;
    });
    await eventually(() => upstream.closedEarly, 'the upstream request to be aborted', { timeoutMs: 5_000 });
    assert.ok(upstream.written < ATTACK_BYTES, `the upstream was cut off (wrote ${upstream.written} of ${ATTACK_BYTES} bytes)`);
  });
});
