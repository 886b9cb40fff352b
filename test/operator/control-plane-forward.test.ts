// The proxy forwards /v1/prompts/* and /v1/policies/* to the control plane: one base URL
// for users, the answer streamed back unchanged, an OpenAI-shaped 502 when it is down.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import { controlPlaneForward } from '../../operator/api/control-plane-forward.ts';
import { startGateway, type RunningGateway } from '../../proxy/start-gateway.ts';
import { TEST_GATEWAY_KEY, baseState } from '../helpers/gateway-harness.ts';

/** A gateway whose control plane is forwarded to `baseUrl` (what `serve --control-plane-url` wires). */
async function startForwardingGateway(baseUrl: string): Promise<{ gateway: RunningGateway; close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-forward-'));
  const statePath = join(dir, 'gateway.yaml');
  await writeFile(statePath, dump(baseState({})));
  const gateway = await startGateway({
    sources: { statePath },
    env: {},
    logger: pino({ level: 'silent' }),
    port: 0,
    controlPlane: () => controlPlaneForward({ baseUrl, timeoutMs: 2000 }),
  });
  return {
    gateway,
    async close() {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('control-plane forwarding', () => {
  let controlPlane: Server;
  let controlPlaneUrl: string;
  let harness: Awaited<ReturnType<typeof startForwardingGateway>>;
  const seen: Seen[] = [];

  before(async () => {
    controlPlane = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
        if (request.url?.startsWith('/v1/prompts/slow/')) {
          response.writeHead(200, { 'content-type': 'application/json', 'x-control-plane': 'yes' });
          response.write('{"success":true,');
          setTimeout(() => response.end('"data":{}}'), 20);
          return;
        }
        response.writeHead(201, { 'content-type': 'application/json', 'x-control-plane': 'yes' });
        response.end(JSON.stringify({ id: 'p-1', object: 'rate_limit_policy' }));
      });
    });
    controlPlane.listen(0, '127.0.0.1');
    await once(controlPlane, 'listening');
    const address = controlPlane.address();
    assert.ok(address !== null && typeof address === 'object');
    controlPlaneUrl = `http://127.0.0.1:${address.port}`;
    harness = await startForwardingGateway(controlPlaneUrl);
  });

  after(async () => {
    await harness.close();
    controlPlane.close();
  });

  test('a POST is forwarded with its body, key and trace id; the answer comes back as sent', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/policies/rate-limits?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-trace-id': 'trace-42', cookie: 'no' },
      body: JSON.stringify({ type: 'requests' }),
    });
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('x-control-plane'), 'yes');
    assert.equal(response.headers.get('x-gateway-trace-id'), 'trace-42');
    assert.deepEqual(await response.json(), { id: 'p-1', object: 'rate_limit_policy' });
    const last = seen.at(-1);
    assert.equal(last?.method, 'POST');
    assert.equal(last?.url, '/v1/policies/rate-limits?x=1');
    assert.equal(last?.body, '{"type":"requests"}');
    assert.equal(last?.headers['x-gateway-api-key'], TEST_GATEWAY_KEY);
    assert.equal(last?.headers['x-gateway-trace-id'], 'trace-42');
    assert.equal(last?.headers['cookie'], undefined, 'only the gateway headers travel');
  });

  test('a streamed answer arrives whole', async () => {
    const response = await fetch(`${harness.gateway.origin}/v1/prompts/slow/render`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY },
      body: '{}',
    });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { success: true, data: {} });
  });

  test('the proxy still rejects an unknown gateway key itself', async () => {
    const before = seen.length;
    const response = await fetch(`${harness.gateway.origin}/v1/policies/rate-limits`, { headers: { 'x-gateway-api-key': 'nope-nope-nope' } });
    assert.equal(response.status, 401);
    assert.equal(seen.length, before);
  });

  test('an unreachable control plane answers an OpenAI-shaped 502', async () => {
    const down = await startForwardingGateway('http://127.0.0.1:1');
    try {
      const response = await fetch(`${down.gateway.origin}/v1/policies/rate-limits`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
      assert.equal(response.status, 502);
      const body = (await response.json()) as { error: { type: string; code: string; message: string } };
      assert.equal(body.error.code, 'AIGW_ERR_UPSTREAM_UNREACHABLE');
      assert.match(body.error.message, /control plane/);
    } finally {
      await down.close();
    }
  });
});
