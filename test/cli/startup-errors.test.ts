// A gateway that cannot start says why in one line and exits non-zero at once: a port in
// use (client or metrics port), a data directory it cannot write, a Node.js older than 24,
// an OTEL_* value it does not support. No stack trace, no process left hanging.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'bin', 'aigateway.js');
const CONFIG = join(ROOT, 'gateway.example.yaml');

let dir: string;
let blocker: Server;
let busyPort = 0;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aigw-startup-'));
  chmodSync(dir, 0o755);
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  busyPort = (blocker.address() as { port: number }).port;
});
after(() => {
  blocker.close();
  rmSync(dir, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, GATEWAY_API_KEY: 'gw-startup-test-key-0123456789abcdef', ...extra };
  for (const name of ['AIGATEWAY_CONFIG', 'AIGATEWAY_PORT', 'AIGATEWAY_DATA_DIR', 'AIGATEWAY_METRICS_PORT', 'AIGATEWAY_LOG_LEVEL', 'OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'REDIS_URL', 'DATABASE_URL']) {
    if (!(name in extra)) delete base[name];
  }
  return base;
}

async function start(args: string[], options: { node?: string; env?: NodeJS.ProcessEnv; uid?: number } = {}): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(options.node ?? process.execPath, [CLI, ...args], {
    cwd: dir,
    env: options.env ?? env(),
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}

/** Exactly one `aigateway:` line, and no stack frames. */
function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((line) => line.startsWith('aigateway:'));
  assert.equal(lines.length, 1, stderr);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  return lines[0] ?? '';
}

const serve = (...more: string[]) => ['serve', '--config', CONFIG, '--data-dir', join(dir, 'data'), '--port', '0', ...more];

describe('start-up errors', { timeout: 60_000 }, () => {
  test('the client port in use: one line naming it, exit 1, no hang', async () => {
    const { code, stderr } = await start(serve('--port', String(busyPort)));
    assert.equal(code, 1);
    assert.match(oneLine(stderr), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${busyPort}: it is already in use`));
  });

  test('the metrics port in use: the same, after the client port was opened (and is closed again)', async () => {
    const { code, stderr } = await start(serve('--metrics-port', String(busyPort)));
    assert.equal(code, 1);
    assert.match(oneLine(stderr), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${busyPort}: it is already in use`));
  });

  test('a data directory that cannot be created: one line with the path and the variable to set', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const { code, stderr } = await start(['serve', '--config', CONFIG, '--port', '0', '--data-dir', join(file, 'data')]);
    assert.equal(code, 1);
    assert.match(oneLine(stderr), /the data directory .*a-file\/data is not writable \(ENOTDIR\): set --data-dir or AIGATEWAY_DATA_DIR/);
  });

  test('a data directory this user may not write (uid 1000, a root-owned directory)', { skip: process.getuid?.() === 0 ? false : 'needs root to run as another user' }, async () => {
    const locked = join(dir, 'root-only');
    mkdirSync(locked, { mode: 0o755 });
    const { code, stderr } = await start(['serve', '--config', CONFIG, '--port', '0', '--data-dir', locked], { uid: 1000 });
    assert.equal(code, 1);
    assert.match(oneLine(stderr), /root-only is not writable \(EACCES\).*uid 1000/);
  });

  test('an unsupported OTEL_EXPORTER_OTLP_PROTOCOL: one line, exit 1', async () => {
    const { code, stderr } = await start(serve(), { env: env({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }) });
    assert.equal(code, 1);
    assert.match(oneLine(stderr), /OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/);
  });

  // The system Node (v20 here) when one is on PATH: the CLI must not die on a SyntaxError.
  const olderNode = (() => {
    try {
      for (const candidate of execFileSync('which', ['-a', 'node'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
        const version = execFileSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
        if (Number(version.split('.')[0]) < 24) return candidate;
      }
    } catch {
      // no `which` or no other node
    }
    return undefined;
  })();
  test('an older Node.js: one line naming the version needed and the one found', { skip: olderNode === undefined ? 'no Node.js older than 24 on PATH' : false }, async () => {
    const { code, stderr } = await start(['validate', CONFIG], { node: olderNode });
    assert.equal(code, 1);
    assert.match(oneLine(stderr), /needs Node\.js 24 or later; this is Node\.js v\d+/);
  });
});
