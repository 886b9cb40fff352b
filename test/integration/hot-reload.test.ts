// Hot reload of the state file while traffic flows: new keys work once the edit is loaded, a broken
// edit keeps the last good state serving, a ConfigMap-style `..data` swap is seen, and a
// request keeps the snapshot it started with.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { startGateway } from '../../proxy/start-gateway.ts';
import { eventually } from '../helpers/eventually.ts';

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
const NEW_KEY = 'gw-added-during-traffic-1-012345';

let mock: MockOpenAI;

before(async () => {
  mock = await startMockOpenAI();
});
after(async () => {
  await mock.close();
});

function stateWith(extraKeys: Array<Record<string, unknown>>, providers: Array<Record<string, unknown>> = []): Record<string, unknown> {
  const state = baseState({ providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: 'sk-x', customHost: mock.url }, ...providers] });
  (state['apiKeys'] as unknown[]).push(...extraKeys);
  return state;
}

async function chat(origin: string, key: string, virtualKey = 'vk-mock'): Promise<number> {
  const response = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-virtual-key': virtualKey },
    body: CHAT,
  });
  await response.arrayBuffer();
  return response.status;
}

async function metricValue(origin: string, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const match = pattern.exec(text);
  return match === null ? 0 : Number(match[1]);
}

describe('hot reload of the state file', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: stateWith([]), reloadIntervalMs: 1000 });
  });
  after(async () => harness.close());

  test('edits during a bounded request loop: every request succeeds, a new key works once the edit is loaded, a broken edit is rejected', async () => {
    const origin = harness.gateway.origin;
    const statuses: number[] = [];
    let stop = false;
    const loop = (async () => {
      for (let i = 0; i < 2000 && !stop; i++) statuses.push(await chat(origin, TEST_GATEWAY_KEY));
    })();

    assert.equal(await chat(origin, NEW_KEY), 401);
    await harness.writeState(stateWith([{ id: 'added', key: NEW_KEY }]));
    await eventually(async () => (await chat(origin, NEW_KEY)) === 200, 'the new key to be accepted', { timeoutMs: 10_000 });

    const failuresBefore = await metricValue(origin, /aigateway_config_reloads_total\{result="failure"\} (\d+)/);
    await harness.writeState('apiKeys: [ {id: broken, key: \n  ::: not yaml');
    await eventually(
      async () => (await metricValue(origin, /aigateway_config_reloads_total\{result="failure"\} (\d+)/)) > failuresBefore,
      'the broken edit to be rejected',
      { timeoutMs: 10_000 },
    );
    // Schema-invalid (valid YAML) is rejected the same way.
    await harness.writeState({ apiKeys: [{ id: 'x' }] });
    await eventually(
      async () => (await metricValue(origin, /aigateway_config_reloads_total\{result="failure"\} (\d+)/)) > failuresBefore + 1,
      'the invalid edit to be rejected',
      { timeoutMs: 10_000 },
    );
    assert.equal(await chat(origin, NEW_KEY), 200, 'the last good state keeps serving');
    assert.ok(harness.logs.some((line) => line['msg'] === 'state reload rejected; the last good state keeps serving'));

    stop = true;
    await loop;
    assert.ok(statuses.length > 10, `loop ran ${statuses.length} requests`);
    assert.deepEqual(
      statuses.filter((status) => status !== 200),
      [],
      'every request in the loop succeeded',
    );
  });

  test('a request keeps the snapshot it started with', async () => {
    const origin = harness.gateway.origin;
    const url = new URL(`${origin}/v1/chat/completions`);
    // Headers go out now; the body follows after the provider was removed by a reload.
    const request = http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-old' },
    });
    const answered = new Promise<number>((resolve, reject) => {
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
    });
    await harness.writeState(stateWith([], [{ slug: 'old', provider: 'openai', virtualKey: 'vk-old', apiKey: 'sk-y', customHost: mock.url }]));
    await eventually(async () => (await chat(origin, TEST_GATEWAY_KEY, 'vk-old')) === 200, 'vk-old to exist', { timeoutMs: 10_000 });
    // Fastify captures the snapshot synchronously in its 'request' listener, which runs
    // before this one: once this fires, the request holds the state with vk-old.
    const arrived = once(harness.gateway.server.app.server, 'request');
    request.flushHeaders();
    await arrived;
    await harness.writeState(stateWith([]));
    await eventually(async () => (await chat(origin, TEST_GATEWAY_KEY, 'vk-old')) === 404, 'vk-old to be removed', { timeoutMs: 10_000 });
    request.end(CHAT);
    assert.equal(await answered, 200);
  });
});

describe('ConfigMap-style mounts', () => {
  test('a `..data` symlink swap is picked up', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aigw-configmap-'));
    const writeVersion = async (name: string, state: unknown): Promise<void> => {
      await mkdir(join(dir, name));
      await writeFile(join(dir, name, 'gateway.yaml'), dump(state));
    };
    await writeVersion('..2026_11_22_00_00_01.1', stateWith([]));
    await symlink('..2026_11_22_00_00_01.1', join(dir, '..data'));
    await symlink('..data/gateway.yaml', join(dir, 'gateway.yaml'));
    const gateway = await startGateway({
      sources: { statePath: join(dir, 'gateway.yaml') },
      env: {},
      logger: pino({ level: 'silent' }),
      port: 0,
    });
    try {
      assert.equal(await chat(gateway.origin, NEW_KEY), 401);
      // The kubelet's update: new timestamped dir, a temporary link, renamed over ..data.
      await writeVersion('..2026_11_22_00_00_02.2', stateWith([{ id: 'added', key: NEW_KEY }]));
      await symlink('..2026_11_22_00_00_02.2', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await rm(join(dir, '..2026_11_22_00_00_01.1'), { recursive: true });
      await eventually(async () => (await chat(gateway.origin, NEW_KEY)) === 200, 'the swapped state', { timeoutMs: 10_000 });
    } finally {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
