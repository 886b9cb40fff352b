// What every Redis-backed test shares: the real Redis (REDIS_URL, default 127.0.0.1:6379)
// under a prefix unique to this run, removed afterwards; a skip reason when Redis is not
// reachable; and the failure doubles: a server that never answers (only a fail-fast path can
// end a call against it) and a proxy that can be cut and restored.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after } from 'node:test';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const PREFIX = `aigw-test:${process.pid}:${randomUUID()}:`;

export const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
admin.on('error', () => {});
export const reachable = await admin.connect().then(() => true, () => false);
export const skip: string | false = reachable ? false : `Redis not reachable at ${REDIS_URL}`;

after(async () => {
  if (!reachable) return;
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    if (keys.length > 0) await admin.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await admin.quit();
});

/** Resolves with the rejection; fails if `call` resolves. */
export async function rejection(call: () => Promise<unknown>): Promise<Error & { code?: unknown }> {
  try {
    await call();
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail('expected a rejection');
}

/** A TCP server that accepts connections and never answers; close() when done. */
export async function silentServer(): Promise<{ url: string; close(): void }> {
  const held = new Set<net.Socket>();
  const server = net.createServer((socket) => held.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    close() {
      for (const socket of held) socket.destroy();
      server.close();
    },
  };
}

/** A TCP proxy to Redis that can be cut (every connection dropped, the port closed) and restored. */
export async function cuttableProxy(target: URL = new URL(REDIS_URL)): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const port = address.port;
  return {
    url: `redis://127.0.0.1:${port}`,
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    async restore() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
  };
}

/** A TCP proxy to Redis that records each chunk the client side sends. */
export async function recordingProxy(): Promise<{ url: string; sent: string[]; close(): void }> {
  const target = new URL(REDIS_URL);
  const sent: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => sent.push(chunk.toString('latin1')));
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    sent,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
