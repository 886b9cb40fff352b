// Child processes of the e2e suite: the operator and the proxy, started through the real
// CLI (`aigateway operator`, `aigateway serve`), on port 0, with their output kept for
// failure messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { NODE, ROOT } from './e2e-environment.ts';
import { eventually } from '../helpers/eventually.ts';

export interface CliProcess {
  readonly child: ChildProcess;
  output(): string;
  /** Sends the signal and waits for the exit (bounded). */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function startCli(args: readonly string[], env: Readonly<Record<string, string>>): CliProcess {
  const child = spawn(NODE, [join(ROOT, 'bin', 'aigateway.js'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output = (output + chunk).slice(-200_000)));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output = (output + chunk).slice(-200_000)));
  return {
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function waitForLine(process: CliProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  let exited: Error | undefined;
  const match = await eventually(
    () => {
      const found = pattern.exec(process.output());
      if (found === null && process.child.exitCode !== null) exited ??= new Error(`process exited ${process.child.exitCode}:\n${process.output()}`);
      return found ?? exited;
    },
    `a line matching ${pattern}`,
    { timeoutMs, intervalMs: 50 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}:\n${process.output()}`);
  });
  if (match instanceof Error) throw match;
  return match;
}

export interface OperatorProcess extends CliProcess {
  readonly apiUrl: string;
  readonly metricsUrl: string;
  readonly identity: string;
}

export interface OperatorProcessOptions {
  readonly kubeconfig: string;
  readonly namespace: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly extraArgs?: readonly string[];
}

export async function startOperatorProcess(options: OperatorProcessOptions): Promise<OperatorProcess> {
  const process = startCli(
    [
      'operator',
      '--namespace', options.namespace,
      '--kubeconfig', options.kubeconfig,
      '--identity', options.identity,
      '--api-port', '0',
      '--metrics-port', '0',
      '--host', '127.0.0.1',
      '--lease-duration-ms', String(options.leaseDurationMs ?? 3000),
      '--egress-allow', '127.0.0.0/8,::1',
      ...(options.extraArgs ?? []),
    ],
    { AIGATEWAY_LOG_LEVEL: 'info' },
  );
  const match = await waitForLine(process, /control-plane API (\S+), metrics (\S+)/, 30_000);
  return { ...process, apiUrl: match[1] ?? '', metricsUrl: match[2] ?? '', identity: options.identity };
}

export interface ProxyProcess extends CliProcess {
  readonly origin: string;
}

export async function startProxyProcess(options: { configPath: string; credentialsPath: string; controlPlaneUrl: string; dataDir: string }): Promise<ProxyProcess> {
  const process = startCli(
    [
      'serve',
      '--config', options.configPath,
      '--credentials', options.credentialsPath,
      '--control-plane-url', options.controlPlaneUrl,
      '--port', '0',
      '--host', '127.0.0.1',
      '--data-dir', options.dataDir,
      '--log-level', 'warn',
    ],
    {},
  );
  const match = await waitForLine(process, /aigateway listening on (http:\/\/[^/\s]+)\/v1/, 30_000);
  return { ...process, origin: match[1] ?? '' };
}
