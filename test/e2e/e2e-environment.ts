// The e2e suite's environment: a real API server (KUBECONFIG from
// ../shared/tools/k8s-test-cluster.sh start) and kubectl + helm from test/e2e/tools.sh.
// When either is missing, `skipReason` says why and every suite skips with it.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const NODE = process.execPath;
const DEFAULT_KUBECONFIG = '/var/tmp/k8s-test-cluster/run/kubeconfig';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly input?: string;
  /** Resolve instead of throwing on a non-zero exit. */
  readonly allowFailure?: boolean;
  readonly timeoutMs?: number;
  readonly env?: Readonly<Record<string, string>>;
}

export interface E2eEnvironment {
  readonly kubeconfig: string;
  readonly binDir: string;
  kubectl(args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  helm(args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  /** A fresh namespace for one suite; deleted by `deleteNamespace`. */
  createNamespace(prefix: string): Promise<string>;
  deleteNamespace(name: string): Promise<void>;
}

export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      command,
      args,
      { timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...options.env } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        const result = { code, stdout, stderr };
        if (code !== 0 && options.allowFailure !== true) {
          reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr || stdout}`));
        } else {
          resolvePromise(result);
        }
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

let cached: Promise<E2eEnvironment | string> | undefined;

/** The environment, or the reason the e2e suites skip. */
export function e2eEnvironment(): Promise<E2eEnvironment | string> {
  cached ??= detect();
  return cached;
}

async function detect(): Promise<E2eEnvironment | string> {
  const forced = process.env['AIGW_E2E_SKIP_REASON'];
  if (forced !== undefined && forced !== '') return forced;
  const kubeconfig = process.env['KUBECONFIG'] || DEFAULT_KUBECONFIG;
  if (!existsSync(kubeconfig)) {
    return `no test cluster: ${kubeconfig} does not exist (run ../shared/tools/k8s-test-cluster.sh build && … start)`;
  }
  const tools = spawnSync(join(ROOT, 'test', 'e2e', 'tools.sh'), { encoding: 'utf8', timeout: 300_000 });
  if (tools.status !== 0) return `kubectl/helm unavailable: test/e2e/tools.sh failed: ${(tools.stderr ?? '').trim().split('\n').at(-1) ?? tools.error?.message}`;
  const binDir = tools.stdout.trim().split('\n').at(-1) ?? '';
  const env = { KUBECONFIG: kubeconfig };
  const kubectl = (args: readonly string[], options: RunOptions = {}) => run(join(binDir, 'kubectl'), args, { ...options, env: { ...env, ...options.env } });
  const helm = (args: readonly string[], options: RunOptions = {}) => run(join(binDir, 'helm'), args, { ...options, env: { ...env, ...options.env } });
  const ready = await kubectl(['get', '--raw', '/readyz'], { allowFailure: true, timeoutMs: 10_000 });
  if (ready.code !== 0 || ready.stdout.trim() !== 'ok') {
    return `the test API server does not answer (${kubeconfig}): ${(ready.stderr || ready.stdout).trim().slice(0, 200)}`;
  }
  return {
    kubeconfig,
    binDir,
    kubectl,
    helm,
    async createNamespace(prefix) {
      const name = `${prefix}-${randomBytes(3).toString('hex')}`;
      await kubectl(['create', 'namespace', name]);
      return name;
    },
    async deleteNamespace(name) {
      await kubectl(['delete', 'namespace', name, '--wait=false', '--ignore-not-found'], { allowFailure: true });
    },
  };
}

