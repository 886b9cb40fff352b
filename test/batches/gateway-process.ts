// A real `aigateway serve` child process (node bin/aigateway.js), for crash tests: started
// on port 0, its URL read from the line it prints; SIGKILL to simulate a crash.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

const BIN = resolve(import.meta.dirname, '../../bin/aigateway.js');

export interface GatewayProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Output so far (stderr + stdout), for failure messages. */
  output(): string;
  /** kill -9, resolved once the process is gone. */
  crash(): Promise<void>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
}

export async function spawnGateway(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--log-level', 'warn', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`gateway did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = /aigateway listening on (http:\/\/\S+\/v1)/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        done(match[1]);
      }
    };
    child.stderr?.on('data', onData);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`gateway exited with ${String(code)} before listening:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    async crash() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
