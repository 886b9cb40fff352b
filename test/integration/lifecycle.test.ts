// Overload and graceful shutdown: a fast 503 past the in-flight limit; on SIGTERM readiness
// goes false first, in-flight streams finish, the process exits 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
let mock: MockOpenAI;
before(async () => {
  mock = await startMockOpenAI();
});
after(async () => mock.close());

function state() {
  return baseState({ providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: 'sk-m', customHost: mock.url }] });
}

function send(origin: string, body: Record<string, unknown> = CHAT): Promise<Response> {
  return fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-mock' },
    body: JSON.stringify(body),
  });
}

describe('overload', () => {
  test('past the in-flight limit requests get a fast 503 with retry-after; the rest succeed', async () => {
    // One key fills the whole budget (the per-key share is tested in test/security/bounded-inputs.test.ts).
    const harness = await startHarness({ state: state(), maxInFlight: 4, maxInFlightPerKey: 4 });
    try {
      mock.reset();
      // The four admitted requests are held upstream until the refusals are in: refusals do
      // not wait for capacity.
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      mock.enqueue(...Array.from({ length: 4 }, () => ({ until: held })));
      const slow = Array.from({ length: 4 }, () => send(harness.gateway.origin));
      await mock.waitForRequests(4);
      const refused = await Promise.all(Array.from({ length: 8 }, () => send(harness.gateway.origin)));
      release();
      for (const response of refused) {
        assert.equal(response.status, 503);
        assert.equal(response.headers.get('retry-after'), '1');
        assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'AIGW_ERR_OVERLOADED');
      }
      for (const response of await Promise.all(slow)) {
        assert.equal(response.status, 200);
        await response.arrayBuffer();
      }
      const afterwards = await send(harness.gateway.origin);
      assert.equal(afterwards.status, 200, 'capacity is given back when requests finish');
      await afterwards.arrayBuffer();
      assert.match(await (await fetch(`${harness.gateway.origin}/metrics`)).text(), /aigateway_overload_rejections_total 8/);
    } finally {
      await harness.close();
    }
  });
});

describe('graceful shutdown', () => {
  test('SIGTERM: readiness false first, an in-flight stream finishes, exit 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aigw-shutdown-'));
    const statePath = join(dir, 'gateway.yaml');
    await writeFile(statePath, dump(state()));
    const cli = fileURLToPath(new URL('../../bin/aigateway.js', import.meta.url));
    const child = spawn(
      process.execPath,
      [cli, 'serve', '--config', statePath, '--port', '0', '--data-dir', join(dir, 'data'), '--log-file', join(dir, 'log'), '--shutdown-delay-ms', '400'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    try {
      const origin = await new Promise<string>((resolve, reject) => {
        let stderr = '';
        child.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const match = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
      mock.reset();
      mock.setChunkDelay(60);
      const streaming = await send(origin, { ...CHAT, stream: true });
      const reader = streaming.body?.getReader();
      assert.ok(reader);
      const first = await reader.read();
      assert.equal(first.done, false);

      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await eventually(async () => (await fetch(`${origin}/ready`).catch(() => undefined))?.status === 503, 'readiness to turn false', { timeoutMs: 10_000 });

      let text = Buffer.from(first.value ?? new Uint8Array()).toString();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the in-flight stream completed');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0);
      await assert.rejects(fetch(`${origin}/health`), 'no longer accepting');
    } finally {
      mock.setChunkDelay(0);
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
