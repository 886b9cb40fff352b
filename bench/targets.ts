import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

// The processes under test, each started on its own and pinned with taskset, so its CPU
// time and RSS are its own. Loopback only.

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
export const BENCH_DIR = join(REPO_ROOT, 'bench');
export const PEER_DIR = join(BENCH_DIR, '.peer');
export const PEER_VERSION = '1.15.2';
const PEER_HONO_OVERRIDE = '1.14.1';

export type TargetName = 'direct' | 'bare' | 'aigateway' | 'peer';

export const TARGET_LABELS: Readonly<Record<TargetName, string>> = {
  direct: 'direct (mock)',
  bare: 'bare Fastify+undici',
  aigateway: 'aigateway',
  peer: `peer (portkey ${PEER_VERSION})`,
};

export interface BenchProcess {
  readonly name: string;
  readonly pid: number;
  readonly outputPath: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface Target {
  readonly name: TargetName;
  readonly origin: string;
  /** The process whose CPU and RSS count for this target (the mock itself for direct). */
  readonly process: BenchProcess;
  /** Request headers; aigateway's config header can change after the routing probe. */
  readonly headers: Record<string, string>;
}

const live = new Set<ChildProcess>();
// Children must not outlive the bench, whatever way it ends.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export function tasksetAvailable(): boolean {
  return (process.env['PATH'] ?? '').split(':').some((dir) => dir !== '' && existsSync(join(dir, 'taskset')));
}

/** The command prefix that pins to `core`; taskset execs, so the pid stays node's. */
export function launchPrefix(core: number | undefined): string[] {
  return core === undefined ? [] : ['taskset', '-c', String(core)];
}

/** Starts `node <args>` pinned to `core` (undefined = unpinned), output to a file in `workDir`. */
export function spawnNode(name: string, args: string[], options: { core: number | undefined; workDir: string; env?: NodeJS.ProcessEnv }): BenchProcess {
  const outputPath = join(options.workDir, `${name}.out`);
  const output = openSync(outputPath, 'a');
  const [command = process.execPath, ...commandArgs] = [...launchPrefix(options.core), process.execPath, ...args];
  const child = spawn(command, commandArgs, { cwd: REPO_ROOT, env: options.env ?? process.env, stdio: ['ignore', output, output] });
  closeSync(output);
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  exited.then(() => live.delete(child), () => undefined);
  return {
    name,
    pid: child.pid,
    outputPath,
    async stop(graceMs = 5_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Polls `url` until it answers 200, the process dies, or the deadline passes. */
export async function waitForHttp(url: string, proc: BenchProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(proc.pid, 0);
    } catch {
      throw new Error(`${proc.name} exited during start-up:\n${tail(proc.outputPath)}`);
    }
    try {
      const answer = await request(url, { signal: AbortSignal.timeout(1_000) });
      await answer.body.dump();
      if (answer.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${proc.name} did not answer ${url} within ${timeoutMs} ms:\n${tail(proc.outputPath)}`);
}

function tail(path: string): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no output)';
  }
}

export interface MockSettings {
  delayMs: number;
  chunks: number;
  chunkIntervalMs: number;
}

export async function startMock(workDir: string, core: number | undefined, settings: MockSettings): Promise<{ origin: string; process: BenchProcess }> {
  const port = await freePort();
  const args = ['bench/mock-upstream.ts', '--port', String(port), '--delay-ms', String(settings.delayMs)];
  args.push('--chunks', String(settings.chunks), '--chunk-interval-ms', String(settings.chunkIntervalMs));
  const proc = spawnNode('mock', args, { core, workDir });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/`, proc);
  return { origin, process: proc };
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const PROVIDER_KEY = 'sk-bench-not-a-real-key';

export function directTarget(mock: { origin: string; process: BenchProcess }): Target {
  return { name: 'direct', origin: mock.origin, process: mock.process, headers: { ...JSON_HEADERS, authorization: `Bearer ${PROVIDER_KEY}` } };
}

export async function startBare(workDir: string, core: number | undefined, mockOrigin: string, nodeFlags: string[] = []): Promise<Target> {
  const port = await freePort();
  const proc = spawnNode('bare', [...nodeFlags, 'bench/bare-proxy.ts', '--port', String(port), '--upstream', mockOrigin], { core, workDir });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/`, proc);
  return { name: 'bare', origin, process: proc, headers: { ...JSON_HEADERS, authorization: `Bearer ${PROVIDER_KEY}` } };
}

export type RoutingMode = 'single' | 'fallback';
/** Saved config ids in bench/aigateway-state.yaml. */
export const ROUTING_CONFIG_IDS: Readonly<Record<RoutingMode, string>> = { single: 'bench-single', fallback: 'bench-fallback' };

export interface AigatewayStart {
  core: number | undefined;
  workDir: string;
  mockOrigin: string;
  routing: RoutingMode;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[];
}

/** The node options the image runs aigateway with (Dockerfile NODE_OPTIONS; npm start too). */
export const AIGATEWAY_NODE_OPTIONS = ['--max-semi-space-size=16', '--max-old-space-size=1024'];

/** aigateway as in production: the CLI, a state file, API-key auth, metrics and a log file. */
export async function startAigateway(options: AigatewayStart): Promise<Target> {
  const port = await freePort();
  const apiKey = `gw-bench-${randomBytes(12).toString('hex')}`;
  const dataDir = join(options.workDir, 'aigateway-data');
  const args = [...AIGATEWAY_NODE_OPTIONS, ...(options.nodeFlags ?? []), 'bin/aigateway.js', 'serve', '--config', join(BENCH_DIR, 'aigateway-state.yaml')];
  args.push('--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, '--log-file', join(options.workDir, 'aigateway-requests.log'));
  const env = { ...process.env, BENCH_MOCK_URL: `${options.mockOrigin}/v1`, BENCH_GATEWAY_KEY: apiKey };
  const proc = spawnNode('aigateway', args, { core: options.core, workDir: options.workDir, env });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/ready`, proc);
  const headers = { ...JSON_HEADERS, 'x-gateway-api-key': apiKey, 'x-gateway-config': ROUTING_CONFIG_IDS[options.routing] };
  return { name: 'aigateway', origin, process: proc, headers };
}

export type PeerInstall = { ok: true; startScript: string } | { ok: false; reason: string };

/** Installs the peer into bench/.peer/ on first use (its own package.json; never the project's). */
export async function ensurePeer(log: (line: string) => void): Promise<PeerInstall> {
  const startScript = join(PEER_DIR, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  if (installedVersion('@portkey-ai/gateway') === PEER_VERSION && installedVersion('@hono/node-server') === PEER_HONO_OVERRIDE) {
    return { ok: true, startScript };
  }
  mkdirSync(PEER_DIR, { recursive: true });
  const manifest = {
    name: 'aigateway-bench-peer',
    private: true,
    description: 'The peer gateway for bench/ (installed by npm run bench; gitignored).',
    dependencies: { '@portkey-ai/gateway': PEER_VERSION },
    // The peer's SSE streaming needs this @hono/node-server version.
    overrides: { '@hono/node-server': PEER_HONO_OVERRIDE },
  };
  writeFileSync(join(PEER_DIR, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  log(`installing @portkey-ai/gateway@${PEER_VERSION} into bench/.peer/ (first run only)…`);
  // Few, short retries: without a registry the bench should go on without the peer quickly.
  const npmArgs = ['install', '--prefix', PEER_DIR, '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'];
  npmArgs.push('--fetch-retries=1', '--fetch-retry-mintimeout=2000', '--fetch-retry-maxtimeout=5000', '--fetch-timeout=30000');
  const failure = await new Promise<string | undefined>((resolve) => {
    execFile('npm', npmArgs, { timeout: 240_000, cwd: PEER_DIR }, (error, _stdout, stderr) => {
      if (error === null) return resolve(undefined);
      const lines = stderr.split('\n').map((line) => line.replace(/^npm (error|ERR!)\s*/, '').trim()).filter((line) => line !== '');
      const code = lines.find((line) => line.startsWith('code '))?.slice(5);
      const message = lines.find((line) => /failed|reason|not found|E404/i.test(line)) ?? lines.find((line) => !/^(code|errno|syscall) /.test(line)) ?? error.message;
      resolve(`npm install failed${code === undefined ? '' : ` (${code})`}: ${message}`);
    });
  });
  if (failure !== undefined) return { ok: false, reason: failure };
  if (!existsSync(startScript)) return { ok: false, reason: `npm install finished but ${startScript} is missing` };
  return { ok: true, startScript };
}

function installedVersion(name: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(PEER_DIR, 'node_modules', name, 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

export async function startPeer(workDir: string, core: number | undefined, startScript: string, mockOrigin: string): Promise<Target> {
  const port = await freePort();
  const proc = spawnNode('peer', [startScript, `--port=${port}`, '--headless'], { core, workDir });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/`, proc);
  const headers = {
    ...JSON_HEADERS,
    authorization: `Bearer ${PROVIDER_KEY}`,
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${mockOrigin}/v1`,
  };
  return { name: 'peer', origin, process: proc, headers };
}
