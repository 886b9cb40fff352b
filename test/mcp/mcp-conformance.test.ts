// The official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
// run against server-everything directly and through the gateway's /mcp/{server}: per
// scenario, the gateway passes at least the checks the upstream passes on its own. (The
// suite expects its own fixtures, so neither scores everything; the comparison is the point.)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { listen, startEverything, type EverythingUpstream } from './upstreams.ts';

const require = createRequire(import.meta.url);
const CLI = join(dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist', 'index.js');

let everything: EverythingUpstream;
let harness: Harness;
let keyed: Server;
let keyedOrigin: string;
let dir: string;

/** The suite sends no gateway key: this hop adds it, and passes everything else through. */
function addingKey(target: string): Server {
  const { hostname, port } = new URL(target);
  return createServer((incoming, outgoing) => {
    const forward = httpRequest({ hostname, port, path: incoming.url, method: incoming.method, headers: { ...incoming.headers, 'x-gateway-api-key': TEST_GATEWAY_KEY } }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forward.on('error', () => outgoing.destroy());
    outgoing.on('close', () => forward.destroy());
    incoming.pipe(forward);
  });
}

interface Score {
  readonly passed: number;
  readonly failed: number;
}

async function score(url: string, output: string): Promise<Map<string, Score>> {
  const result = await promisify(execFile)(process.execPath, [CLI, 'server', '--url', url, '-o', output], { cwd: dir, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
  );
  const scores = new Map<string, Score>();
  for (const [, scenario, passed, failed] of String(result.stdout).matchAll(/^[✓✗] ([\w-]+): (\d+) passed, (\d+) failed$/gm)) {
    scores.set(scenario ?? '', { passed: Number(passed), failed: Number(failed) });
  }
  return scores;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-conformance-'));
  everything = await startEverything();
  harness = await startHarness({ state: baseState({ mcpServers: [{ name: 'everything', url: everything.url }] }) });
  keyed = addingKey(harness.gateway.origin);
  keyedOrigin = await listen(keyed);
});

after(async () => {
  keyed?.closeAllConnections();
  keyed?.close();
  await harness?.close();
  await everything?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('MCP conformance suite', () => {
  test('through the gateway, every scenario scores at least what the upstream scores directly', { timeout: 600_000 }, async () => {
    const direct = await score(everything.url, join(dir, 'direct'));
    const gateway = await score(`${keyedOrigin}/mcp/everything`, join(dir, 'gateway'));
    assert.ok(direct.size >= 20, `the suite ran (${direct.size} scenarios)`);
    const worse: string[] = [];
    for (const [scenario, upstream] of direct) {
      const through = gateway.get(scenario) ?? { passed: 0, failed: 0 };
      if (through.passed < upstream.passed) worse.push(`${scenario}: ${through.passed} passed through the gateway, ${upstream.passed} directly`);
    }
    const total = (scores: Map<string, Score>) => [...scores.values()].reduce((sum, entry) => sum + entry.passed, 0);
    console.log(`conformance: ${total(gateway)} checks passed through the gateway, ${total(direct)} directly, over ${direct.size} scenarios`);
    assert.deepEqual(worse, []);
  });
});
