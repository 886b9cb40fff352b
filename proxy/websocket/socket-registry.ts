import type { WebSocket } from 'ws';
import { GatewayError } from '../errors.ts';

// Every WebSocket session this replica holds: the caps on how many one key and the replica
// may hold (checked before the upgrade, so a refusal is an HTTP answer), the keep-alive
// sweep, and the drain that sends each a close frame with a reason on shutdown.

export interface SocketLimits {
  /** Sessions one API key may hold on this replica. */
  readonly maxSocketsPerKey: number;
  /** Sessions this replica holds at most. */
  readonly maxSockets: number;
  /** Largest message accepted from a client (ws maxPayload); past it the socket closes with 1009. */
  readonly maxMessageBytes: number;
  /** Bytes queued to a client that is not reading; past it the socket closes with 1008. */
  readonly maxBufferedBytes: number;
  /** A ping every so often; a socket that did not answer the previous one is cut. */
  readonly pingIntervalMs: number;
  /** Longest a session may last. */
  readonly maxSessionMs: number;
  /** A session that sends nothing for this long is closed. */
  readonly idleTimeoutMs: number;
  /** On shutdown, how long a turn in flight may finish before its socket is closed anyway. */
  readonly drainGraceMs: number;
}

export const DEFAULT_SOCKET_LIMITS: SocketLimits = {
  maxSocketsPerKey: 64,
  maxSockets: 1024,
  maxMessageBytes: 16 * 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  pingIntervalMs: 30_000,
  maxSessionMs: 60 * 60_000,
  idleTimeoutMs: 10 * 60_000,
  drainGraceMs: 10_000,
};

/** Close codes the gateway sends (RFC 6455 §7.4.1). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  unsupportedData: 1003,
  policy: 1008,
  tooBig: 1009,
  internal: 1011,
  tryAgainLater: 1013,
} as const;

/** WebSocket readyState values (the `ws` constants, without loading it). */
export const READY = { connecting: 0, open: 1, closing: 2, closed: 3 } as const;

/** One session: what the registry needs to keep it alive, count it and drain it. */
export interface Session {
  readonly socket: WebSocket;
  readonly keyId: string | undefined;
  /** Asked to end for shutdown: close now, or once the turn in flight is done. */
  drain(): void;
}

export class SocketRegistry {
  readonly limits: SocketLimits;
  readonly #sessions = new Set<Session>();
  readonly #byKey = new Map<string, number>();
  #held = 0;
  readonly #alive = new WeakMap<WebSocket, boolean>();
  #sweep: NodeJS.Timeout | undefined;
  #draining = false;

  constructor(limits: SocketLimits) {
    this.limits = limits;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Takes a slot for an upgrade being admitted, or throws the HTTP refusal past a cap (or
   * while draining). Slots are taken before the upgrade, so a flood of parallel upgrades
   * cannot all pass the check; the returned release (idempotent) gives it back.
   */
  reserve(keyId: string | undefined): () => void {
    if (this.#draining) throw new GatewayError('AIGW_ERR_OVERLOADED', 'The gateway is shutting down; reconnect to another replica.', { headers: { 'retry-after': '1' } });
    if (this.#held >= this.limits.maxSockets) {
      throw new GatewayError('AIGW_ERR_OVERLOADED', `This gateway replica holds ${this.#held} WebSocket sessions, its most; retry shortly.`, { headers: { 'retry-after': '1' } });
    }
    const held = keyId === undefined ? 0 : (this.#byKey.get(keyId) ?? 0);
    if (held >= this.limits.maxSocketsPerKey) {
      throw new GatewayError('AIGW_ERR_KEY_IN_FLIGHT_LIMIT', `This API key holds ${held} WebSocket sessions, the most one key may hold; close one first.`, {
        headers: { 'retry-after': '1' },
      });
    }
    this.#held++;
    if (keyId !== undefined) this.#byKey.set(keyId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held--;
      if (keyId === undefined) return;
      const left = (this.#byKey.get(keyId) ?? 1) - 1;
      if (left <= 0) this.#byKey.delete(keyId);
      else this.#byKey.set(keyId, left);
    };
  }

  /** A session whose upgrade completed; `release` is its slot, given back when it closes. */
  add(session: Session, release: () => void): void {
    this.#sessions.add(session);
    this.#alive.set(session.socket, true);
    session.socket.on('pong', () => this.#alive.set(session.socket, true));
    session.socket.once('close', () => {
      release();
      this.#remove(session);
    });
    this.#sweep ??= setInterval(() => this.#ping(), this.limits.pingIntervalMs).unref();
    if (this.#draining) session.drain();
  }

  /** Every session gets its close frame (1001 with a reason); returns once all are gone or the grace is over. */
  async drainAll(): Promise<void> {
    this.#draining = true;
    if (this.#sessions.size === 0) return this.#stop();
    const gone = new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.#sessions.size === 0) resolve();
      };
      for (const session of this.#sessions) session.socket.once('close', () => setImmediate(check));
    });
    for (const session of this.#sessions) session.drain();
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.limits.drainGraceMs + 1_000).unref());
    await Promise.race([gone, grace]);
    for (const session of this.#sessions) session.socket.terminate();
    this.#stop();
  }

  #stop(): void {
    if (this.#sweep !== undefined) clearInterval(this.#sweep);
    this.#sweep = undefined;
  }

  #remove(session: Session): void {
    if (!this.#sessions.delete(session)) return;
    if (this.#sessions.size === 0) this.#stop();
  }

  // A peer that did not answer the last ping is gone (a half-open TCP connection): cut it.
  #ping(): void {
    for (const { socket } of this.#sessions) {
      if (this.#alive.get(socket) === false) {
        socket.terminate();
        continue;
      }
      this.#alive.set(socket, false);
      try {
        socket.ping();
      } catch {
        socket.terminate();
      }
    }
  }
}
