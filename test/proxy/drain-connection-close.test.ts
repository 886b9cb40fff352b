// Draining: once close() starts, answers say `connection: close`, so keep-alive clients
// reconnect to another replica during the shutdown delay instead of racing the close.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { startGateway } from '../../proxy/start-gateway.ts';

test('during the shutdown delay answers carry connection: close; before it, connections are kept alive', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-drain-'));
  const statePath = join(dir, 'gateway.yaml');
  await writeFile(statePath, '{}\n');
  const gateway = await startGateway({ sources: { statePath }, env: {}, logger: pino({ level: 'silent' }), port: 0 });
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  try {
    const before = await request(`${gateway.origin}/health`, { dispatcher: agent });
    await before.body.dump();
    assert.equal(before.statusCode, 200);
    assert.notEqual(before.headers['connection'], 'close');
    const closing = gateway.close({ delayMs: 500 });
    const during = await request(`${gateway.origin}/health`, { dispatcher: agent });
    await during.body.dump();
    assert.equal(during.statusCode, 200, 'still serving during the delay');
    assert.equal(during.headers['connection'], 'close');
    const ready = await request(`${gateway.origin}/ready`, { dispatcher: agent });
    await ready.body.dump();
    assert.equal(ready.statusCode, 503);
    await closing;
  } finally {
    await agent.close();
    await rm(dir, { recursive: true, force: true });
  }
});
