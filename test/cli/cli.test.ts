// The CLI as a user runs it: validate exit codes, serve with flags/env, the generated key.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { threadsOf } from '../helpers/threads.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'bin', 'aigateway.js');

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-cli-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['GATEWAY_API_KEY', 'AIGATEWAY_CONFIG', 'AIGATEWAY_PORT', 'AIGATEWAY_HOST', 'AIGATEWAY_DATA_DIR']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

async function run(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

interface Served {
  child: ChildProcess;
  origin: string;
  stderr: () => string;
}

async function serve(args: string[], env: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 10_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)\/v1/.exec(stderr);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${stderr}`));
    });
  });
  return { child, origin, stderr: () => stderr };
}

async function stop(served: Served): Promise<number | null> {
  const exited = once(served.child, 'exit');
  served.child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

describe('aigateway validate', () => {
  test('a valid file → exit 0', async () => {
    const file = join(dir, 'valid.yaml');
    await writeFile(file, 'apiKeys:\n  - { id: a, key: "${GATEWAY_API_KEY}" }\nconfigs:\n  - { id: c, config: { provider: openai, api_key: sk-1 } }\n');
    const result = await run(['validate', file]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /valid/);
  });

  test('the shipped example is valid', async () => {
    const result = await run(['validate', join(ROOT, 'gateway.example.yaml')]);
    assert.equal(result.code, 0, result.stdout);
  });

  test('an invalid file → exit 1 with every problem', async () => {
    const file = join(dir, 'invalid.yaml');
    await writeFile(file, 'apiKeys:\n  - { id: a }\nconfigs:\n  - { id: c, config: { retry: { attempts: 9 } } }\n');
    const result = await run(['validate', file]);
    assert.equal(result.code, 1);
    assert.match(result.stdout, /apiKeys\[0\]/);
    assert.match(result.stdout, /retry\.attempts/);
  });

  test('unknown commands and missing arguments → usage, exit 2', async () => {
    assert.equal((await run(['frobnicate'])).code, 2);
    assert.equal((await run(['validate'])).code, 2);
    assert.equal((await run(['serve'])).code, 2);
    const leases = await run(['serve', '--config', join(ROOT, 'gateway.example.yaml'), '--budget-leases', 'sometimes']);
    assert.equal(leases.code, 2);
    assert.match(leases.stderr, /budget-leases must be on or off, got "sometimes"/);
  });
});

describe('aigateway serve', () => {
  test('generates and prints a key when GATEWAY_API_KEY is unset; flags win over env; SIGTERM exits 0', async () => {
    const served = await serve(
      ['--config', join(ROOT, 'gateway.example.yaml'), '--port', '0', '--data-dir', join(dir, 'data')],
      cleanEnv({ AIGATEWAY_PORT: '1', AIGATEWAY_LOG_FILE: join(dir, 'requests.log') }),
    );
    try {
      const key = /this run's gateway API key is:\n\s+(gw-\S+)/.exec(served.stderr())?.[1];
      assert.ok(key, 'the generated key is printed');
      assert.ok(key.length > 20);
      assert.equal((await fetch(`${served.origin}/health`)).status, 200);
      const denied = await fetch(`${served.origin}/v1/chat/completions`, { method: 'POST' });
      assert.equal(denied.status, 401);
      const accepted = await fetch(`${served.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': key },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(accepted.status, 404, 'authenticated; "m" is not in the model catalog');
    } finally {
      assert.equal(await stop(served), 0);
    }
  });

  test('environment variables configure serve when flags are absent', async () => {
    const served = await serve([], cleanEnv({ AIGATEWAY_CONFIG: join(ROOT, 'gateway.example.yaml'), AIGATEWAY_PORT: '0', AIGATEWAY_HOST: '127.0.0.1', GATEWAY_API_KEY: 'gw-from-env-123456-0123456789abc', AIGATEWAY_DATA_DIR: join(dir, 'data2'), AIGATEWAY_LOG_FILE: join(dir, 'r.log') }));
    try {
      assert.ok(!served.stderr().includes("this run's gateway API key"), 'no key generated when one is set');
      const response = await fetch(`${served.origin}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': 'gw-from-env-123456-0123456789abc' },
        body: JSON.stringify({ model: 'm', input: 'x' }),
      });
      assert.equal(response.status, 404);
    } finally {
      assert.equal(await stop(served), 0);
    }
  });

  test("serve runs V8's helper threads at nice 10 (the flag sets another value); a value past 19, or an idle heap headroom past 1024 MiB, is a usage error", { skip: process.platform !== 'linux' }, async () => {
    const helperNices = (pid: number): number[] => [...new Set(threadsOf(pid).filter((thread) => thread.name === 'V8Worker').map((thread) => thread.nice))];
    const args = ['--config', join(ROOT, 'gateway.example.yaml'), '--port', '0', '--data-dir', join(dir, 'data3')];
    const env = cleanEnv({ GATEWAY_API_KEY: 'gw-from-env-123456-0123456789abc', AIGATEWAY_LOG_FILE: join(dir, 'r3.log') });
    for (const [extra, nice] of [[[], 10], [['--helper-thread-nice', '4'], 4]] as const) {
      const served = await serve([...args, ...extra], env);
      const pid = served.child.pid as number;
      let helpers: number[];
      let serving: number | undefined;
      let logWorker: number[];
      try {
        helpers = helperNices(pid);
        serving = threadsOf(pid).find((thread) => thread.tid === pid)?.nice;
        logWorker = [...new Set(threadsOf(pid).filter((thread) => thread.name === 'WorkerThread').map((thread) => thread.nice))];
      } finally {
        assert.equal(await stop(served), 0);
      }
      // Relative to the runner's own nice value (a CI started under `nice`); never above the serving thread.
      assert.deepEqual(helpers, [Math.max(nice, getPriority())]);
      assert.equal(serving, getPriority(), 'the serving thread keeps its priority');
      // The SQLite log worker (the only worker thread here) sets itself to 5 through the same module.
      if (getPriority() === 0) assert.deepEqual(logWorker, [5]);
    }
    const refused = await run(['serve', ...args], { ...env, AIGATEWAY_HELPER_THREAD_NICE: '20' });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /helper-thread-nice must be 0-19/);
    const tooMuch = await run(['serve', ...args, '--idle-heap-headroom-mib', '2048'], env);
    assert.equal(tooMuch.code, 2);
    assert.match(tooMuch.stderr, /idle-heap-headroom-mib must be 0-1024/);
  });

  test('an invalid state file → exit 1 with the problems', async () => {
    const file = join(dir, 'broken.yaml');
    await writeFile(file, 'apiKeys: [ { id: a } ]\n');
    const result = await run(['serve', '--config', file, '--port', '0']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /apiKeys\[0\]/);
  });
});
