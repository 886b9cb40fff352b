// Idle memory (issue 32): `aigateway serve` with the benchmark's features (API-key auth, a
// fallback config with retry, metrics, a log file, the SQLite log store) loads none of the
// libraries only some features use until a request needs them. The price table is the one
// the benchmark's traffic needs: it is loaded by the first priced answer (after it went out),
// and that answer is answered correctly.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEY = 'gw-lazy-start-key-0123456789abcdef';
// Packages a gateway without tracing, Redis, PostgreSQL, MCP traffic, WebSocket upgrades or a
// priced answer never needs.
const LAZY = ['@pydantic/genai-prices', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', 'ioredis', 'pg', '@modelcontextprotocol/sdk', 'ws', '@kubernetes/client-node'];

// Appends every loaded node_modules package to a file, so the test can read it at any point.
const HOOK = `
import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
const out = process.env.LAZY_LOADS_FILE;
const seen = new Set();
registerHooks({
  load(url, context, next) {
    const match = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(url);
    if (match && !seen.has(match[1])) { seen.add(match[1]); appendFileSync(out, match[1] + '\\n'); }
    return next(url, context);
  },
});
`;

let upstream: Server;
let dir: string;
let child: ReturnType<typeof spawn> | undefined;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aigw-lazy-start-'));
  upstream = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({
          id: 'chatcmpl-lazy',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  child?.kill('SIGKILL');
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

function loaded(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, output: () => string): Promise<T> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`timed out waiting for ${what}: ${output().slice(-2000)}`);
}

describe('aigateway serve loads feature libraries on first use', () => {
  test('none of them at start-up; the first priced answer is correct and loads the price table', async () => {
    const port = (upstream.address() as { port: number }).port;
    const state = join(dir, 'state.yaml');
    writeFileSync(
      state,
      [
        'apiKeys:',
        `  - { id: lazy, key: ${KEY}, workspace: lazy, scopes: [inference] }`,
        'providers:',
        `  - { slug: mock, provider: openai, apiKey: sk-lazy-not-real, customHost: "http://127.0.0.1:${port}/v1" }`,
        `  - { slug: mock-backup, provider: openai, apiKey: sk-lazy-not-real, customHost: "http://127.0.0.1:${port}/v1" }`,
        'configs:',
        '  - id: lazy-fallback',
        '    config:',
        '      strategy: { mode: fallback }',
        '      retry: { attempts: 2 }',
        '      targets: [{ provider: "@mock" }, { provider: "@mock-backup" }]',
        'egress:',
        '  allow: ["127.0.0.0/8"]',
        '',
      ].join('\n'),
    );
    const hook = join(dir, 'hook.mjs');
    writeFileSync(hook, HOOK);
    const loads = join(dir, 'loads.txt');
    let output = '';
    const env: NodeJS.ProcessEnv = { ...process.env, LAZY_LOADS_FILE: loads, AIGATEWAY_COMPILE_CACHE_DIR: join(dir, 'cache') };
    for (const name of ['OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'REDIS_URL', 'DATABASE_URL', 'AIGATEWAY_LOG_STORE', 'AIGATEWAY_CONSOLE']) delete env[name];
    const args = ['--import', hook, 'bin/aigateway.js', 'serve', '--config', state, '--port', '0', '--data-dir', join(dir, 'data'), '--log-file', join(dir, 'requests.log')];
    const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const url = await until('the gateway to listen', () => /listening on (http:\/\/\S+\/v1)/.exec(output)?.[1], () => output);

    const atStart = loaded(loads);
    assert.ok(atStart.includes('fastify'), 'the hook saw the start-up');
    for (const name of LAZY) assert.ok(!atStart.includes(name), `${name} is not loaded at start-up`);

    const answer = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': KEY, 'x-gateway-config': 'lazy-fallback' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello.' }] }),
    });
    const body = (await answer.json()) as { choices: Array<{ message: { content: string } }> };
    assert.equal(answer.status, 200);
    assert.equal(body.choices[0]?.message.content, 'Hello.');
    // Its cost (for the request log and budgets) is what loads the table, after the answer went out.
    await until('the price table to load', () => (loaded(loads).includes('@pydantic/genai-prices') ? true : undefined), () => output);
    const afterFirst = loaded(loads);
    for (const name of LAZY.filter((lib) => lib !== '@pydantic/genai-prices')) assert.ok(!afterFirst.includes(name), `${name} is still not loaded`);
    proc.kill('SIGTERM');
    await new Promise((resolve) => proc.once('exit', resolve));
    child = undefined;
  });
});
