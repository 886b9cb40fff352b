// The `ws` library is loaded on the first accepted upgrade, not at start-up: a gateway
// started in a child process (so no other test has loaded it) serves HTTP without resolving
// any `ws` module, and resolves it once a raw-socket upgrade is accepted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

const harnessUrl = new URL('../helpers/gateway-harness.ts', import.meta.url).href;

const script = `
import { registerHooks } from 'node:module';
import net from 'node:net';
let loaded = 0;
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    if (/\\/node_modules\\/ws\\//.test(result.url)) loaded++;
    return result;
  },
});
const { startHarness, baseState, TEST_GATEWAY_KEY } = await import(${JSON.stringify(harnessUrl)});
const harness = await startHarness({ state: baseState() });
const answer = await fetch(harness.gateway.url + '/models', { headers: { authorization: 'Bearer ' + TEST_GATEWAY_KEY } });
await answer.arrayBuffer();
const atStart = loaded;
const port = Number(new URL(harness.gateway.url).port);
const status = await new Promise((resolve, reject) => {
  const socket = net.connect(port, '127.0.0.1');
  socket.once('data', (chunk) => {
    resolve(chunk.toString('latin1').split(' ')[1]);
    socket.destroy();
  });
  socket.once('error', reject);
  socket.write('GET /v1/responses HTTP/1.1\\r\\nhost: x\\r\\nconnection: Upgrade\\r\\nupgrade: websocket\\r\\nsec-websocket-version: 13\\r\\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nauthorization: Bearer ' + TEST_GATEWAY_KEY + '\\r\\n\\r\\n');
});
await harness.close();
console.log(JSON.stringify({ atStart, afterUpgrade: loaded, status, http: answer.status }));
process.exit(0);
`;

describe('ws is loaded lazily', () => {
  test('no ws module is resolved at start-up or by HTTP traffic; the first accepted upgrade loads it', () => {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', timeout: 60_000 });
    const line = run.stdout.trim().split('\n').at(-1) ?? '';
    assert.equal(run.status, 0, `child failed: ${run.stderr.slice(-2000)}`);
    const result = JSON.parse(line) as { atStart: number; afterUpgrade: number; status: string; http: number };
    assert.equal(result.http, 200);
    assert.equal(result.atStart, 0, 'ws was not loaded at start-up');
    assert.equal(result.status, '101');
    assert.ok(result.afterUpgrade > 0, 'the accepted upgrade loaded ws');
  });
});
