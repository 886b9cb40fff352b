// `docker run <image>` with no flags and no mounts serves. No container engine runs here, so
// the Dockerfile's final stage is replayed on the host: its COPYs into a scratch root, its
// `node -e` RUNs (as root, paths moved under the scratch root), then ENTRYPOINT + CMD as the
// image's USER with its ENV — a default data directory uid 1000 cannot write, or a --config
// the image does not contain, fails here as it would in the container.
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, matchesGlob, posix } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Instruction {
  readonly op: string;
  readonly arg: string;
}

/** The instructions of the Dockerfile's last stage (continuation lines joined, comments dropped). */
function finalStage(text: string): Instruction[] {
  const joined = text.replace(/\\\n/g, ' ');
  const lines = joined.split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  const instructions = lines.map((line) => {
    const space = line.indexOf(' ');
    return { op: line.slice(0, space).toUpperCase(), arg: line.slice(space + 1).trim() };
  });
  const last = instructions.map((instruction) => instruction.op).lastIndexOf('FROM');
  return instructions.slice(last + 1);
}

const canSwitchUser = process.getuid?.() === 0;
const scratch = mkdtempSync(join(tmpdir(), 'aigw-image-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('the image\'s default command serves as uid 1000, with its default data directory writable', { skip: canSwitchUser ? false : 'needs root to switch to uid 1000', timeout: 60_000 }, async () => {
  chmodSync(scratch, 0o755);
  const inImage = (path: string): string => join(scratch, path);
  const moved = (value: string): string => (value.startsWith('/') ? inImage(value) : value);
  const stage = finalStage(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  let workdir = '/';
  let user: number | undefined;
  const env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  const volumes: string[] = [];
  for (const { op, arg } of stage) {
    if (op === 'WORKDIR') {
      workdir = posix.resolve(workdir, arg);
      mkdirSync(inImage(workdir), { recursive: true, mode: 0o755 });
    } else if (op === 'ENV') {
      // KEY=value or KEY="value with spaces", as Docker reads them.
      for (const match of arg.matchAll(/(\w+)=(?:"([^"]*)"|(\S+))/g)) env[match[1] ?? ''] = match[2] ?? match[3] ?? '';
    } else if (op === 'COPY') {
      const parts = arg.split(/\s+/);
      const from = parts.find((part) => part.startsWith('--from='));
      const paths = parts.filter((part) => !part.startsWith('--'));
      const target = paths.pop() ?? '';
      for (const source of paths) {
        // What .dockerignore leaves out of the build context cannot be copied.
        if (from === undefined) assert.ok(!ignored.some((pattern) => matchesGlob(source, pattern) || source.startsWith(`${pattern}/`)), `${source} is in .dockerignore`);
        // `COPY a ./` copies into the directory; `COPY dir ./dir` or `COPY a /x/b` to that path.
        const into = target.endsWith('/') || target === '.';
        const destination = inImage(posix.resolve(workdir, into ? posix.join(target, posix.basename(source)) : target));
        mkdirSync(dirname(destination), { recursive: true, mode: 0o755 });
        // The deps stage's node_modules: the repository's (read-only for uid 1000 like the image's).
        if (from !== undefined) symlinkSync(join(ROOT, 'node_modules'), destination);
        else cpSync(join(ROOT, source), destination, { recursive: true });
      }
    } else if (op === 'RUN' && arg.startsWith('[')) {
      const argv = JSON.parse(arg) as string[];
      if (argv[0] !== 'node' || argv[1] !== '-e') continue; // the compile-cache warm-up is an optimisation
      assert.equal(user, undefined, 'set-up RUNs happen as root, before USER');
      execFileSync(process.execPath, ['-e', (argv[2] ?? '').replaceAll("'/", `'${scratch}/`)]);
    } else if (op === 'USER') {
      user = Number(arg.split(':')[0]);
    } else if (op === 'VOLUME') {
      volumes.push(...(JSON.parse(arg) as string[]));
    } else if (op === 'ENTRYPOINT') {
      entrypoint = JSON.parse(arg) as string[];
    } else if (op === 'CMD') {
      cmd = JSON.parse(arg) as string[];
    }
  }
  assert.equal(user, 1000, 'never root');
  assert.deepEqual(entrypoint.slice(0, 2), ['node', 'bin/aigateway.js']);
  const dataDir = env['AIGATEWAY_DATA_DIR'] ?? posix.resolve(workdir, '.data');
  assert.ok(volumes.includes(dataDir), 'the data directory is a volume');
  assert.equal(statSync(inImage(dataDir)).uid, 1000, 'the data directory belongs to uid 1000');

  // Dirs made by mkdirSync/cpSync above keep root's umask; uid 1000 must be able to enter them.
  for (const dir of [inImage('/etc'), inImage('/etc/aigateway'), inImage('/etc/aigateway/state')]) chmodSync(dir, 0o755);
  mkdirSync(inImage('/tmp'), { mode: 0o1777 });
  chmodSync(inImage('/tmp'), 0o1777);
  const runEnv: Record<string, string> = { PATH: process.env['PATH'] ?? '' };
  for (const [name, value] of Object.entries(env)) runEnv[name] = moved(value);
  // Port 0 and loopback instead of the image's 8787 on every interface; the rest is the CMD as shipped.
  const args = [...entrypoint.slice(1), ...cmd.map(moved), '--port', '0', '--host', '127.0.0.1'];
  const child = spawn(process.execPath, args, { cwd: inImage(workdir), env: runEnv, uid: 1000, gid: 1000, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  try {
    const origin = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/[^\s/]+)\/v1/.exec(stderr);
        if (match?.[1] !== undefined) resolve(match[1]);
      });
      child.once('exit', (code) => reject(new Error(`the image's command exited ${code}: ${stderr}`)));
    });
    const ready = await fetch(`${origin}/ready`);
    assert.equal(ready.status, 200);
    assert.ok(readdirSync(inImage(dataDir)).length > 0, 'the stores were created in the data directory');
  } finally {
    // Its shutdown still writes to the data directory (the stores close): wait for it, or the
    // scratch root's removal races it (ENOTEMPTY).
    const exited = child.exitCode !== null || child.signalCode !== null ? undefined : once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
});
