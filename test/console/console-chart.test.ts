// The chart's `proxy.console` value: off by default (no --console), on passes --console to
// the proxy. Rendered by the real helm binary (test/e2e/tools.sh installs it).
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { loadAll } from 'js-yaml';

const ROOT = join(import.meta.dirname, '..', '..');
let helmBin = '';
let skip: string | false = false;
try {
  helmBin = join(execFileSync('bash', [join(ROOT, 'test', 'e2e', 'tools.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(), 'helm');
} catch (error) {
  skip = `helm could not be installed (test/e2e/tools.sh): ${(error as Error).message}`;
}

async function proxyArgs(...sets: string[]): Promise<string[]> {
  const args = ['template', 'rel', join(ROOT, 'charts', 'aigateway'), '-n', 'aigw'];
  for (const set of sets) args.push('--set', set);
  const { stdout } = await promisify(execFile)(helmBin, args, { timeout: 60_000, maxBuffer: 32 * 1024 * 1024 });
  const docs = loadAll(stdout) as Array<{ kind?: string; metadata?: { name?: string }; spec?: { template: { spec: { containers: Array<{ args: string[] }> } } } } | null>;
  const proxy = docs.find((doc) => doc?.kind === 'Deployment' && doc.metadata?.name === 'rel-aigateway-proxy');
  assert.ok(proxy?.spec !== undefined, 'the proxy Deployment is rendered');
  return proxy.spec.template.spec.containers[0]?.args ?? [];
}

test('proxy.console: off by default, on passes --console to serve', { skip, timeout: 120_000 }, async () => {
  assert.equal((await proxyArgs()).includes('--console'), false);
  assert.equal((await proxyArgs('proxy.console=true')).includes('--console'), true);
});

test('proxy.logBodies: off by default, on passes --log-bodies to serve', { skip, timeout: 120_000 }, async () => {
  assert.equal((await proxyArgs()).includes('--log-bodies'), false);
  assert.equal((await proxyArgs('proxy.logBodies=true')).includes('--log-bodies'), true);
});
