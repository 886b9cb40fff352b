import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import { GatewayError, toErrorBody } from '../errors.ts';

// Upgrades routed through Fastify before they are accepted, so the upgrade paths are ordinary
// routes (default deny, scopes, in-flight caps, the preHandler's admission), and a refusal is
// an HTTP answer on the upgrade. This is what @fastify/websocket did, without loading `ws`
// at start-up: the library is imported when the first upgrade is accepted (or the first
// realtime upstream is dialled), so a gateway that never sees a WebSocket never loads it.
// A handshake `ws` would refuse (bad key or version, not GET) is refused here, before
// routing, so nothing is admitted, reserved or dialled for it.

interface PendingUpgrade {
  readonly socket: Duplex;
  readonly head: Buffer;
  /** Headers the 101 answer carries besides the handshake's (e.g. the remaining budget). */
  headers?: Readonly<Record<string, string>>;
}

const pending = new WeakMap<IncomingMessage, PendingUpgrade>();
/** Extra 101 headers of upgrades being accepted, read by the server's 'headers' event. */
const accepted = new WeakMap<IncomingMessage, Readonly<Record<string, string>>>();

/** True when the request is a WebSocket upgrade (not yet accepted). */
export function isUpgrade(request: FastifyRequest): boolean {
  return pending.has(request.raw);
}

let wsLibrary: Promise<typeof import('ws')> | undefined;

/** The `ws` library, imported once, on first use. */
export function loadWs(): Promise<typeof import('ws')> {
  wsLibrary ??= import('ws');
  return wsLibrary;
}

export interface UpgradeOptions {
  /** Largest message accepted from a client; past it the socket closes with 1009. */
  readonly maxPayload: number;
  /** The subprotocol answered from those offered, or false for none. */
  readonly handleProtocols: (protocols: Set<string>, request: IncomingMessage) => string | false;
  /** Runs before the upgrade is routed (e.g. to lift a subprotocol key into a header). */
  readonly beforeRouting: (request: IncomingMessage) => void;
  /** An error on an accepted socket (a reset peer, a bad frame). */
  readonly onSocketError: (error: Error, socket: WebSocket) => void;
  readonly onRoutingError: (error: Error) => void;
}

const KEY = /^[+/0-9A-Za-z]{22}==$/;

/** Routes one app's upgrades through its router, and accepts them once admitted. */
export class UpgradeRouter {
  readonly #app: FastifyInstance;
  readonly #options: UpgradeOptions;
  #server: WebSocketServer | undefined;

  constructor(app: FastifyInstance, options: UpgradeOptions) {
    this.#app = app;
    this.#options = options;
    app.server.on('upgrade', this.#onUpgrade);
  }

  /** Stops routing upgrades (shutdown). */
  stop(): void {
    this.#app.server.removeListener('upgrade', this.#onUpgrade);
  }

  /** Headers for the 101 answer of an upgrade not yet accepted (names and values as the route set them). */
  setUpgradeHeaders(request: FastifyRequest, headers: Readonly<Record<string, string>>): void {
    const upgrade = pending.get(request.raw);
    if (upgrade !== undefined) upgrade.headers = headers;
  }

  /**
   * Accepts the upgrade of a routed request (after its hooks and preHandler admitted it):
   * the reply is hijacked and the socket handed over. Undefined when the request is not an
   * upgrade or the client left first.
   */
  async accept(request: FastifyRequest, reply: FastifyReply): Promise<WebSocket | undefined> {
    const upgrade = pending.get(request.raw);
    if (upgrade === undefined) return undefined;
    pending.delete(request.raw);
    reply.hijack();
    let wss: WebSocketServer;
    try {
      wss = await this.#webSocketServer();
    } catch (error) {
      // The library could not be loaded (a broken install): no client waits on a silent socket.
      upgrade.socket.destroy();
      throw error;
    }
    if (upgrade.socket.destroyed) return undefined;
    return new Promise<WebSocket | undefined>((resolve) => {
      // ws takes the socket's errors from here on.
      upgrade.socket.removeListener('error', destroySocket);
      const aborted = (): void => resolve(undefined);
      upgrade.socket.once('close', aborted);
      if (upgrade.headers !== undefined) accepted.set(request.raw, upgrade.headers);
      wss.handleUpgrade(request.raw, upgrade.socket, upgrade.head, (ws) => {
        upgrade.socket.removeListener('close', aborted);
        ws.on('error', (error) => this.#options.onSocketError(error, ws));
        resolve(ws);
      });
    });
  }

  async #webSocketServer(): Promise<WebSocketServer> {
    const { WebSocketServer } = await loadWs();
    this.#server ??= new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: this.#options.maxPayload,
      handleProtocols: this.#options.handleProtocols,
    });
    // ws emits this synchronously inside handleUpgrade, just before it writes the 101.
    this.#server.on('headers', (lines: string[], request: IncomingMessage) => {
      const extra = accepted.get(request);
      if (extra === undefined) return;
      accepted.delete(request);
      for (const [name, value] of Object.entries(extra)) lines.push(`${name}: ${value}`);
    });
    return this.#server;
  }

  readonly #onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Node removed its own error listener before emitting 'upgrade'.
    socket.on('error', destroySocket);
    const websocket = request.headers.upgrade?.toLowerCase() === 'websocket';
    const problem = websocket ? handshakeProblem(request) : undefined;
    if (problem !== undefined) {
      refuseHandshake(socket, problem);
      return;
    }
    if (websocket) {
      this.#options.beforeRouting(request);
      pending.set(request, { socket, head });
    }
    const response = new ServerResponse(request);
    // An upgrade answered over HTTP (a refusal, or another protocol's upgrade on an ordinary
    // route) ends its connection once the answer is out: nothing else would close it.
    response.once('finish', () => socket.end());
    try {
      response.assignSocket(socket as Socket);
      this.#app.routing(request, response);
    } catch (error) {
      this.#options.onRoutingError(error as Error);
      socket.destroy();
    }
  };
}

/** What `ws` would refuse in a handshake, as the gateway's error; undefined when it is sound. */
function handshakeProblem(request: IncomingMessage): GatewayError | undefined {
  if (request.method !== 'GET') return new GatewayError('AIGW_ERR_METHOD_NOT_ALLOWED', 'A WebSocket upgrade is a GET request.');
  const key = request.headers['sec-websocket-key'];
  if (key === undefined || !KEY.test(key)) return new GatewayError('AIGW_ERR_MALFORMED_REQUEST', 'Missing or invalid Sec-WebSocket-Key header.', { param: 'sec-websocket-key' });
  const version = request.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return new GatewayError('AIGW_ERR_MALFORMED_REQUEST', 'Missing or unsupported Sec-WebSocket-Version header (13).', { param: 'sec-websocket-version' });
  return undefined;
}

function refuseHandshake(socket: Duplex, error: GatewayError): void {
  const body = JSON.stringify(toErrorBody(error));
  const reason = error.status === 405 ? 'Method Not Allowed' : 'Bad Request';
  const version = error.status === 400 ? 'sec-websocket-version: 13\r\n' : '';
  socket.end(`HTTP/1.1 ${error.status} ${reason}\r\nconnection: close\r\ncontent-type: application/json\r\n${version}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

function destroySocket(this: Duplex): void {
  this.destroy();
}
