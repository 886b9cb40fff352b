// Keep-alive and session limits of the WebSocket transports, with short limits: a peer that
// stops answering pings is cut, one that answers stays; idle and over-long sessions get a
// close frame with the reason.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, test } from 'node:test';
import { baseState, startHarness, TEST_GATEWAY_KEY } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { closed, open, wsUrl } from './ws-client.ts';

const HEADERS = { authorization: `Bearer ${TEST_GATEWAY_KEY}` };

describe('WebSocket keep-alive and limits', () => {
  test('a peer that stops answering pings is cut; one that answers stays open', async () => {
    const harness = await startHarness({ state: baseState(), websocket: { pingIntervalMs: 250 } });
    try {
      const url = wsUrl(harness.gateway.url, '/v1/responses');
      const live = await open(url, { headers: HEADERS });
      const silent = await open(url, { headers: HEADERS });
      let pings = 0;
      live.on('ping', () => pings++);
      const tcp = (silent as unknown as { _socket: Socket })._socket;
      tcp.pause();
      const gone = closed(silent);
      // Several sweeps later (counted by the live peer's pings), the silent one is gone.
      await eventually(() => pings >= 4, 'four pings to the live peer', { timeoutMs: 10_000 });
      tcp.resume();
      assert.equal((await gone).code, 1006, 'terminated, not closed: it was not answering');
      assert.equal(live.readyState, live.OPEN);
      live.close();
    } finally {
      await harness.close();
    }
  });

  test('an idle session is closed with "idle timeout"; a session past its duration with its reason', async () => {
    const idle = await startHarness({ state: baseState(), websocket: { idleTimeoutMs: 50 } });
    try {
      const socket = await open(wsUrl(idle.gateway.url, '/v1/responses'), { headers: HEADERS });
      assert.deepEqual(await closed(socket), { code: 1000, reason: 'idle timeout' });
    } finally {
      await idle.close();
    }
    const short = await startHarness({ state: baseState(), websocket: { maxSessionMs: 50 } });
    try {
      const socket = await open(wsUrl(short.gateway.url, '/v1/responses'), { headers: HEADERS });
      assert.deepEqual(await closed(socket), { code: 1000, reason: 'session duration limit reached' });
    } finally {
      await short.close();
    }
  });
});
