// Hostile input on the WebSocket transports, beyond the bad events each transport's own test
// sends: malformed handshakes refused before routing (nothing admitted or dialled), frames
// that break the protocol (unmasked, bad UTF-8, unknown opcode) closed with their code,
// realtime readers and upstreams that stop reading cut at the buffer cap, and an upgrade
// flood across keys held to the replica's cap — each time other sessions unharmed.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { WebSocket as ServerSocket } from 'ws';
import { startMockRealtime, type MockRealtime } from '../fixtures/mock-openai-realtime.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { closed, connect, isRefusal, open, recorder, wsUrl } from './ws-client.ts';

const PROVIDER_KEY = 'sk-realtime-provider-key-5678';
const MODEL = 'gpt-4o-realtime-preview';
const HEADERS = { authorization: `Bearer ${TEST_GATEWAY_KEY}`, 'x-gateway-config': 'rt' };
const VALID_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

let mock: MockRealtime;
before(async () => {
  mock = await startMockRealtime({ apiKey: PROVIDER_KEY });
});
after(() => mock.close());
beforeEach(() => {
  mock.upgrades.length = 0;
  mock.received.length = 0;
});

function state(): Record<string, unknown> {
  return baseState({
    providers: [{ slug: 'rt', provider: 'openai', virtualKey: 'vk-rt', apiKey: PROVIDER_KEY, customHost: mock.url }],
    configs: [{ id: 'rt', config: { provider: '@rt' } }],
  });
}

function portOf(harness: Harness): number {
  return Number(new URL(harness.gateway.url).port);
}

/** Sends raw bytes on a fresh connection; resolves with everything the gateway sent until it closed. */
function rawExchange(port: number, ...writes: Array<string | Buffer>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let written = false;
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      // Frames after the handshake: written once the 101 is in.
      if (!written && Buffer.concat(chunks).includes('\r\n\r\n')) {
        written = true;
        for (const write of writes.slice(1)) socket.write(write);
      }
    });
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
    socket.write(writes[0] as string | Buffer);
  });
}

function handshake(path: string, headers: Record<string, string>, method = 'GET'): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: Upgrade', 'upgrade: websocket', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A client frame: masked (with a zero key, so the payload is as given) unless `masked` is false. */
function frame(opcode: number, payload: Buffer, masked = true): Buffer {
  const head = Buffer.from([0x80 | opcode, (masked ? 0x80 : 0) | payload.length]);
  return Buffer.concat([head, masked ? Buffer.alloc(4) : Buffer.alloc(0), payload]);
}

/** The close code of the close frame after the 101 answer. */
function closeCodeOf(answer: Buffer): number | undefined {
  const end = answer.indexOf('\r\n\r\n');
  assert.match(answer.subarray(0, end).toString('latin1'), /^HTTP\/1\.1 101 /);
  const frames = answer.subarray(end + 4);
  for (let at = 0; at + 2 <= frames.length; ) {
    const opcode = (frames[at] as number) & 0x0f;
    let length = (frames[at + 1] as number) & 0x7f;
    let start = at + 2;
    if (length === 126) {
      length = frames.readUInt16BE(start);
      start += 2;
    }
    if (opcode === 0x8) return frames.readUInt16BE(start);
    at = start + length;
  }
  return undefined;
}

describe('WebSocket hostile input', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: state(), websocket: { maxMessageBytes: 32 * 1024, maxBufferedBytes: 128 * 1024 } });
  });
  after(() => harness.close());

  test('malformed handshakes are refused with an HTTP answer before routing: nothing is admitted or dialled upstream', async () => {
    const port = portOf(harness);
    const auth = { authorization: HEADERS.authorization, 'x-gateway-config': 'rt', 'sec-websocket-version': '13' };
    for (const [what, request, status] of [
      ['a bad Sec-WebSocket-Key', handshake(`/v1/realtime?model=${MODEL}`, { ...auth, 'sec-websocket-key': 'short' }), 400],
      ['no Sec-WebSocket-Key', handshake(`/v1/realtime?model=${MODEL}`, auth), 400],
      ['an unknown version', handshake(`/v1/realtime?model=${MODEL}`, { ...auth, 'sec-websocket-key': VALID_KEY, 'sec-websocket-version': '99' }), 400],
      ['a POST upgrade', handshake(`/v1/realtime?model=${MODEL}`, { ...auth, 'sec-websocket-key': VALID_KEY }, 'POST'), 405],
    ] as const) {
      const answer = (await rawExchange(port, request)).toString('utf8');
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), what);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'invalid_request_error', what);
    }
    assert.equal(mock.upgrades.length, 0, 'no upstream socket was opened for a malformed handshake');
    // Another protocol's upgrade on an ordinary route is answered as HTTP, then closed.
    const h2c = (await rawExchange(port, 'GET /health HTTP/1.1\r\nhost: x\r\nconnection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAAP__\r\n\r\n')).toString('utf8');
    assert.match(h2c, /^HTTP\/1\.1 200 /);
  });

  test('frames that break the protocol close the socket with their code (1002, 1007); other sessions are unharmed', async () => {
    const bystander = await open(wsUrl(harness.gateway.url, `/v1/realtime?model=${MODEL}`), { headers: HEADERS });
    const bystanderEvents = recorder(bystander);
    const port = portOf(harness);
    const upgrade = handshake(`/v1/realtime?model=${MODEL}`, { ...HEADERS, 'sec-websocket-key': VALID_KEY, 'sec-websocket-version': '13' });
    const event = Buffer.from(JSON.stringify({ type: 'response.create' }));
    for (const [what, bad, code] of [
      ['an unmasked client frame', frame(0x1, event, false), 1002],
      ['a reserved opcode', frame(0x3, event), 1002],
      ['a text frame that is not UTF-8', frame(0x1, Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), 1007],
    ] as const) {
      const answer = await rawExchange(port, upgrade, bad);
      assert.equal(closeCodeOf(answer), code, what);
    }
    assert.equal(mock.received.length, 0, 'no broken frame reached the upstream');
    bystander.send(JSON.stringify({ type: 'response.create' }));
    await bystanderEvents.until('response.done');
    bystander.close();
  });

  test('a realtime client that stops reading is closed 1008 at the send-buffer cap; others unharmed', async () => {
    const bystander = await open(wsUrl(harness.gateway.url, `/v1/realtime?model=${MODEL}`), { headers: HEADERS });
    const bystanderEvents = recorder(bystander);
    const socket = await open(wsUrl(harness.gateway.url, `/v1/realtime?model=${MODEL}`), { headers: HEADERS });
    await recorder(socket).until('session.created');
    // The client cannot see its close frame while it reads nothing: the upstream side tells.
    const upstream = [...mock.sockets].at(-1) as ServerSocket;
    let upstreamClosed = false;
    upstream.once('close', () => (upstreamClosed = true));
    const tcp = (socket as unknown as { _socket: net.Socket })._socket;
    tcp.pause();
    const gone = closed(socket);
    // Each session.update is echoed back (~30 KB): the echoes pile up in front of a reader that reads nothing.
    const update = JSON.stringify({ type: 'session.update', session: { instructions: 'x'.repeat(30 * 1024) } });
    let sent = 0;
    await eventually(
      () => {
        if (upstreamClosed) return true;
        for (let index = 0; index < 16 && sent < 2000; index++, sent++) socket.send(update);
        return false;
      },
      'the gateway gave up on the reader',
      { timeoutMs: 30_000 },
    );
    tcp.resume();
    const close = await gone;
    assert.equal(close.code, 1008);
    assert.match(close.reason, /not reading/);
    bystander.send(JSON.stringify({ type: 'response.create' }));
    await bystanderEvents.until('response.done');
    bystander.close();
  });

  test('a realtime upstream that stops reading is cut at the upstream buffer cap with 1013', async () => {
    const socket = await open(wsUrl(harness.gateway.url, `/v1/realtime?model=${MODEL}`), { headers: HEADERS });
    await recorder(socket).until('session.created');
    const upstream = [...mock.sockets].at(-1) as ServerSocket;
    (upstream as unknown as { _socket: net.Socket })._socket.pause();
    const gone = closed(socket);
    const append = JSON.stringify({ type: 'input_audio_buffer.append', audio: 'A'.repeat(30 * 1024) });
    let sent = 0;
    await eventually(
      () => {
        if (socket.readyState !== socket.OPEN) return true;
        for (let index = 0; index < 16 && sent < 4000; index++, sent++) socket.send(append);
        return false;
      },
      'the gateway gave up on the upstream',
      { timeoutMs: 30_000 },
    );
    const close = await gone;
    assert.equal(close.code, 1013);
    assert.match(close.reason, /upstream is not reading/);
  });
});

describe('an upgrade flood across keys', () => {
  test("holds the replica to its session cap: the rest are refused with 503 before any upstream is dialled, none left half-open", async () => {
    const keys = Array.from({ length: 4 }, (_, index) => ({ id: `flood-${index}`, key: `gw-flood-key-${index}-0123456789abcdef0123456789`, scopes: ['inference'] }));
    const base = state();
    const harness = await startHarness({ state: { ...base, apiKeys: [...(base['apiKeys'] as unknown[]), ...keys] }, websocket: { maxSockets: 3 } });
    try {
      const url = wsUrl(harness.gateway.url, `/v1/realtime?model=${MODEL}`);
      const attempts = await Promise.all(Array.from({ length: 24 }, (_, index) => connect(url, { headers: { ...HEADERS, authorization: `Bearer ${keys[index % keys.length]?.key}` } })));
      const accepted = attempts.filter((attempt) => !isRefusal(attempt));
      const refused = attempts.filter(isRefusal);
      assert.equal(accepted.length, 3);
      assert.ok(refused.every((refusal) => refusal.status === 503 && refusal.body.includes('AIGW_ERR_OVERLOADED')));
      assert.equal(mock.upgrades.length, 3, 'only admitted upgrades dialled the provider');
      for (const socket of accepted) if (!isRefusal(socket)) socket.close();
      await Promise.all(accepted.map((socket) => (isRefusal(socket) ? undefined : closed(socket))));
      await eventually(async () => {
        const again = await connect(url, { headers: HEADERS });
        if (isRefusal(again)) return false;
        again.close();
        return true;
      }, 'the slots are given back');
    } finally {
      await harness.close();
    }
  });
});
