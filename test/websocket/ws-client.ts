// A small WebSocket client for the tests: connect with exact headers, read the answer to a
// refused upgrade, and collect events until one of a given type.
import WebSocket from 'ws';

export interface Refusal {
  readonly status: number;
  readonly body: string;
}

/** Connects; resolves with the open socket, or with the HTTP answer that refused the upgrade. */
export function connect(url: string, options: { headers?: Record<string, string>; protocols?: string[]; maxPayload?: number } = {}): Promise<WebSocket | Refusal> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers, maxPayload: options.maxPayload ?? 0 });
    // Events that arrive with the upgrade's answer come before the caller can listen.
    const received: Array<Record<string, unknown>> = [];
    early.set(socket, received);
    socket.on('message', (data, isBinary) => {
      if (!isBinary) received.push(JSON.parse(data.toString()) as Record<string, unknown>);
    });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    socket.once('error', reject);
  });
}

const early = new WeakMap<WebSocket, Array<Record<string, unknown>>>();

export function isRefusal(value: WebSocket | Refusal): value is Refusal {
  return !(value instanceof WebSocket);
}

export async function open(url: string, options: Parameters<typeof connect>[1] = {}): Promise<WebSocket> {
  const result = await connect(url, options);
  if (isRefusal(result)) throw new Error(`upgrade refused: ${result.status} ${result.body}`);
  return result;
}

/** Every JSON event the socket receives, in order. */
export function recorder(socket: WebSocket): { events: Array<Record<string, unknown>>; until(type: string, count?: number): Promise<Array<Record<string, unknown>>> } {
  const events = early.get(socket) ?? [];
  const waiters: Array<() => void> = [];
  socket.on('message', () => {
    for (const waiter of waiters.splice(0)) waiter();
  });
  return {
    events,
    until(type, count = 1) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (events.filter((event) => event['type'] === type).length >= count) resolve(events);
          else if (socket.readyState === WebSocket.CLOSED) reject(new Error(`socket closed before ${count}× ${type}; got ${events.map((e) => e['type']).join(',')}`));
          else waiters.push(check);
        };
        socket.once('close', () => {
          for (const waiter of waiters.splice(0)) waiter();
        });
        check();
      });
    },
  };
}

/** Resolves with the close code and reason the peer sent. */
export function closed(socket: WebSocket): Promise<{ code: number; reason: string }> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve({ code: -1, reason: 'already closed' });
  return new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })));
}

export function wsUrl(httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, 'ws').replace(/\/v1$/, '') + path;
}
