// `npm pack` of the gateway and of sdk/js gives packages that run once installed: each tarball
// is unpacked into a fresh project's node_modules as npm installs it (its dependencies linked
// from this repository's node_modules: the test runs offline), then `npx aigateway` validates
// and serves from it, and `import '@aigateway/sdk'` works. Node does not strip types under
// node_modules, so this fails unless the package ships JavaScript for every module it loads.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
// npm's scripts (prepack) and npx run `node` from PATH: the Node that runs this test.
const PATH = `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}`;
const scratch = mkdtempSync(join(tmpdir(), 'aigw-pack-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

interface PackResult {
  filename: string;
  files: Array<{ path: string }>;
}

async function pack(dir: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: dir, env: { ...process.env, PATH }, maxBuffer: 16 * 1024 * 1024 });
  // Lifecycle scripts may print before the JSON array.
  const [result] = JSON.parse(stdout.slice(stdout.indexOf('[\n'))) as PackResult[];
  assert.ok(result);
  return { tarball: join(scratch, result.filename), files: result.files.map((file) => file.path) };
}

/** Unpacks a tarball as `npm install` would put it: <project>/node_modules/<name>. */
async function install(project: string, tarball: string, name: string, dependencies: readonly string[]): Promise<string> {
  const target = join(project, 'node_modules', name);
  mkdirSync(target, { recursive: true });
  await run('tar', ['xzf', tarball, '-C', target, '--strip-components=1']);
  for (const dependency of dependencies) {
    const link = join(project, 'node_modules', dependency);
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', dependency), link);
  }
  return target;
}

describe('npm pack', () => {
  test('the gateway package: `npx aigateway` validates and serves from an installed tarball', { timeout: 120_000 }, async () => {
    const { tarball, files } = await pack(ROOT);
    assert.ok(files.includes('bin/aigateway.js'));
    assert.ok(files.includes('dist/bin/commands.js'));
    assert.ok(files.includes('dist/proxy/logs/sqlite-log-worker.js'), 'the log store worker');
    assert.ok(!files.some((file) => file.endsWith('.ts')), 'no TypeScript: Node will not strip it under node_modules');
    assert.ok(!files.some((file) => file.startsWith('test/') || file.startsWith('bench/')));
    assert.ok(!existsSync(join(ROOT, 'dist')), 'postpack removed the build');

    const project = join(scratch, 'gateway-user');
    mkdirSync(project);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; bin: Record<string, string> };
    const installed = await install(project, tarball, 'aigateway', Object.keys(manifest.dependencies));
    mkdirSync(join(project, 'node_modules', '.bin'));
    symlinkSync(join(installed, manifest.bin['aigateway'] ?? ''), join(project, 'node_modules', '.bin', 'aigateway'));
    const env: NodeJS.ProcessEnv & { GATEWAY_API_KEY: string } = { ...process.env, PATH, GATEWAY_API_KEY: 'gw-pack-test-key-0123456789abcdef' };
    for (const name of ['AIGATEWAY_CONFIG', 'AIGATEWAY_PORT', 'AIGATEWAY_DATA_DIR', 'REDIS_URL', 'DATABASE_URL', 'AIGATEWAY_LOG_STORE']) delete env[name];

    const config = join(installed, 'gateway.example.yaml');
    const validated = await run('npx', ['--offline', 'aigateway', 'validate', config], { cwd: project, env });
    assert.match(validated.stdout, /valid/);
    // The operator's modules load too (its argument parser answers).
    const operator = await run('npx', ['--offline', 'aigateway', 'operator', '--no-such-flag'], { cwd: project, env }).catch((error: { code: number; stderr: string }) => error);
    assert.equal((operator as { code: number }).code, 2);
    assert.match((operator as { stderr: string }).stderr, /aigateway operator: Unknown option '--no-such-flag'/);

    const child = spawn('npx', ['--offline', 'aigateway', 'serve', '--config', config, '--port', '0', '--data-dir', join(project, 'data')], {
      cwd: project,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true, // npx's child too is ended by the group signal below
    });
    let stderr = '';
    try {
      const origin = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const match = /listening on (http:\/\/[^\s/]+)\/v1/.exec(stderr);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`npx aigateway serve exited ${code}: ${stderr}`)));
      });
      assert.equal((await fetch(`${origin}/ready`)).status, 200);
      // The request log (a SQLite worker thread, loaded by URL) answers.
      const logs = await fetch(`${origin}/v1/logs`, { headers: { 'x-gateway-api-key': env.GATEWAY_API_KEY } });
      assert.equal(logs.status, 200, await logs.clone().text());
    } finally {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    }
  });

  test('the SDK package: built JavaScript and types, `import \'@aigateway/sdk\'` works once installed', { timeout: 120_000 }, async () => {
    const { tarball, files } = await pack(join(ROOT, 'sdk', 'js'));
    for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/gateway.js', 'package.json']) assert.ok(files.includes(file), file);
    const project = join(scratch, 'sdk-user');
    mkdirSync(project);
    await install(project, tarball, '@aigateway/sdk', ['openai']);
    const script = [
      "import { Gateway, createHeaders } from '@aigateway/sdk';",
      "const headers = createHeaders({ apiKey: 'gw-x', provider: '@openai-prod' });",
      "const client = new Gateway({ apiKey: 'gw-x', baseURL: 'http://127.0.0.1:1/v1' });",
      'console.log(JSON.stringify({ headers, chat: typeof client.chat.completions.create }));',
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
    const result = JSON.parse(stdout) as { headers: Record<string, string>; chat: string };
    assert.equal(result.headers['x-gateway-provider'], '@openai-prod');
    assert.equal(result.chat, 'function');
  });
});
