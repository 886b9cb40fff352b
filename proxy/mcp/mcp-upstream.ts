import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { LATEST_PROTOCOL_VERSION, type Notification } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import type { McpServer } from './mcp-catalog.ts';
import type { UpstreamSession } from './mcp-session.ts';
import { postOnSession } from './mcp-upstream-post.ts';

// The gateway as an MCP client (the official SDK's Client) to its upstreams.
//
// Streamable HTTP: no connection is kept but the agent's. A request on an upstream session
// whose id the gateway holds is one POST (mcp-upstream-post.ts): any replica can send it.
// initialize and stateless upstreams (no session id) use an SDK Client for the call. Every
// fetch goes through the gateway's upstream agent (the egress policy applies), adds the
// server's headers only for the server's own origin, follows no redirect, and cuts an
// answer past the byte cap.
//
// stdio and SSE: the connection is the session, so each replica keeps one per server
// (started on first use, restarted when its definition changes or it dies) shared by every
// gateway session on that replica.

export interface UpstreamDeps {
  readonly dispatcher: Dispatcher;
  readonly logger: Logger;
  /** Largest answer read from an upstream for one request. */
  maxUpstreamBytes(): number;
}

/** Why an upstream call failed, in terms a JSON-RPC error can carry. */
export class UpstreamFailure extends Error {
  readonly kind: 'unavailable' | 'session_expired' | 'too_large' | 'timeout' | 'error';
  /** The upstream's own JSON-RPC error, relayed as is. */
  readonly rpcCode: number | undefined;
  readonly rpcData: unknown;
  constructor(kind: UpstreamFailure['kind'], message: string, rpcCode?: number, rpcData?: unknown) {
    super(message);
    this.kind = kind;
    this.rpcCode = rpcCode;
    this.rpcData = rpcData;
  }
}

const CLIENT_INFO = { name: 'aigateway', version: '1' };

type SessionWithId = UpstreamSession & { readonly id: string };
const MAX_INITIALIZE_MS = 10_000;

/** Notifications of pooled upstreams, for the GET streams of the sessions using them. */
export type NotificationListener = (server: string, notification: Notification) => void;

interface Pooled {
  readonly fingerprint: string;
  readonly ready: Promise<Client>;
  client: Client | undefined;
  version: string;
}

export class McpUpstreams {
  readonly #deps: UpstreamDeps;
  readonly #pool = new Map<string, Pooled>();
  readonly #listeners = new Set<NotificationListener>();
  #closed = false;

  constructor(deps: UpstreamDeps) {
    this.#deps = deps;
  }

  onNotification(listener: NotificationListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Opens an upstream session (initialize) for a new gateway session. */
  async initialize(server: McpServer, clientHeaders: ClientHeaders, signal?: AbortSignal): Promise<UpstreamSession> {
    if (server.entry.transport !== 'streamable-http') {
      const pooled = await this.#pooled(server);
      return { id: undefined, version: pooled.version };
    }
    const limit = new AbortController();
    const transport = new StreamableHTTPClientTransport(new URL(server.entry.url as string), {
      fetch: this.#fetchFor(server, clientHeaders, limit),
      reconnectionOptions: NO_RECONNECT,
    });
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    try {
      // A server that does not initialize promptly holds up the client's initialize: capped.
      await client.connect(transport, { timeout: Math.min(server.entry.timeoutMs, MAX_INITIALIZE_MS), signal: anySignal(limit.signal, signal) });
      return { id: transport.sessionId, version: transport.protocolVersion ?? LATEST_PROTOCOL_VERSION };
    } catch (error) {
      throw failureOf(error, server);
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  /** Sends one request to the upstream and returns its result (validated loosely by `schema`). */
  request<T>(
    server: McpServer,
    session: UpstreamSession,
    clientHeaders: ClientHeaders,
    request: { method: string; params?: Record<string, unknown> | undefined },
    schema: ResultSchema<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    // The hot path, returned as is (no async frame around it): one POST on a held session.
    if (server.entry.transport === 'streamable-http' && session.id !== undefined) {
      const cap = this.#deps.maxUpstreamBytes();
      return postOnSession<T>({ dispatcher: this.#deps.dispatcher, server, session: session as SessionWithId, clientHeaders, message: request, schema, cap, signal });
    }
    return this.#requestWithClient(server, session, clientHeaders, request, schema, signal);
  }

  /** A request over a pooled connection (stdio, SSE) or to a stateless upstream, with an SDK Client. */
  async #requestWithClient<T>(
    server: McpServer,
    session: UpstreamSession,
    clientHeaders: ClientHeaders,
    request: { method: string; params?: Record<string, unknown> | undefined },
    schema: ResultSchema<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    if (server.entry.transport !== 'streamable-http') {
      const pooled = await this.#pooled(server);
      try {
        return await (pooled.client as Client).request(request as never, schema as never, { timeout: server.entry.timeoutMs, signal });
      } catch (error) {
        throw failureOf(error, server);
      }
    }
    // A stateless upstream (no session id): initialize on each use is what it expects.
    const limit = new AbortController();
    const transport = new StreamableHTTPClientTransport(new URL(server.entry.url as string), {
      fetch: this.#fetchFor(server, clientHeaders, limit),
      reconnectionOptions: NO_RECONNECT,
    });
    transport.setProtocolVersion(session.version);
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    try {
      await client.connect(transport, { timeout: server.entry.timeoutMs, signal: anySignal(limit.signal, signal) });
      return (await client.request(request as never, schema as never, { timeout: server.entry.timeoutMs, signal: anySignal(limit.signal, signal) })) as T;
    } catch (error) {
      throw failureOf(error, server);
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  /** Opens the upstream's own notification stream (GET) for a streamable-HTTP session. */
  async openNotificationStream(server: McpServer, session: UpstreamSession, clientHeaders: ClientHeaders, signal: AbortSignal): Promise<Response | undefined> {
    if (server.entry.transport !== 'streamable-http' || session.id === undefined) return undefined;
    const fetcher = this.#fetchFor(server, clientHeaders, undefined, Number.POSITIVE_INFINITY);
    const response = await fetcher(server.entry.url as string, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': session.id, 'mcp-protocol-version': session.version },
      signal,
    });
    if (!response.ok || response.body === null) {
      await response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    return response;
  }

  /** Ends an upstream session (the client's DELETE). */
  async terminate(server: McpServer, session: UpstreamSession, clientHeaders: ClientHeaders): Promise<void> {
    if (server.entry.transport !== 'streamable-http' || session.id === undefined) return;
    const fetcher = this.#fetchFor(server, clientHeaders, undefined);
    const response = await fetcher(server.entry.url as string, {
      method: 'DELETE',
      headers: { 'mcp-session-id': session.id, 'mcp-protocol-version': session.version },
      signal: AbortSignal.timeout(server.entry.timeoutMs),
    });
    await response.body?.cancel().catch(() => undefined);
  }

  /** Stops pooled servers whose definition is gone or changed. */
  retain(servers: ReadonlyMap<string, McpServer>): void {
    for (const [name, pooled] of this.#pool) {
      const current = servers.get(name);
      if (current === undefined || current.fingerprint !== pooled.fingerprint || current.entry.transport === 'streamable-http') {
        this.#pool.delete(name);
        void pooled.client?.close().catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pooled = [...this.#pool.values()];
    this.#pool.clear();
    await Promise.allSettled(pooled.map(async (entry) => (await entry.ready.catch(() => undefined))?.close()));
  }

  #pooled(server: McpServer): Promise<Pooled> {
    if (this.#closed) return Promise.reject(new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable: the gateway is closing.`));
    const existing = this.#pool.get(server.name);
    if (existing !== undefined && existing.fingerprint === server.fingerprint) return existing.ready.then(() => existing);
    if (existing !== undefined) void existing.client?.close().catch(() => undefined);
    const entry: Pooled = { fingerprint: server.fingerprint, ready: undefined as never, client: undefined, version: LATEST_PROTOCOL_VERSION };
    const forget = (): void => {
      if (this.#pool.get(server.name) === entry) this.#pool.delete(server.name);
    };
    const connect = async (): Promise<Client> => {
      const client = new Client(CLIENT_INFO, { capabilities: {} });
      client.fallbackNotificationHandler = async (notification) => {
        for (const listener of this.#listeners) listener(server.name, notification);
      };
      client.onclose = forget;
      const transport = this.#pooledTransport(server);
      try {
        await client.connect(transport, { timeout: server.entry.timeoutMs });
      } catch (error) {
        forget();
        await client.close().catch(() => undefined);
        throw failureOf(error, server);
      }
      entry.client = client;
      const version = (transport as { protocolVersion?: string }).protocolVersion;
      if (version !== undefined) entry.version = version;
      return client;
    };
    (entry as { ready: Promise<Client> }).ready = connect();
    this.#pool.set(server.name, entry);
    return entry.ready.then(() => entry);
  }

  #pooledTransport(server: McpServer): Transport {
    if (server.entry.transport === 'stdio') {
      const transport = new StdioClientTransport({
        command: server.entry.command as string,
        args: server.entry.args,
        env: { ...getDefaultEnvironment(), ...server.entry.env },
        cwd: server.entry.cwd,
        stderr: 'ignore',
      });
      return transport;
    }
    // Legacy HTTP+SSE: the GET stream lives as long as the connection, so it has no byte cap.
    const fetcher = this.#fetchFor(server, {}, undefined, Number.POSITIVE_INFINITY);
    return new SSEClientTransport(new URL(server.entry.url as string), { fetch: fetcher, eventSourceInit: { fetch: fetcher } });
  }

  /**
   * The fetch an upstream transport uses: through the gateway's agent (egress policy),
   * the server's headers only on its own origin, no redirects, answers capped.
   */
  #fetchFor(server: McpServer, clientHeaders: ClientHeaders, limit: AbortController | undefined, cap = this.#deps.maxUpstreamBytes()): (url: string | URL, init?: RequestInit) => Promise<Response> {
    const origin = new URL(server.entry.url ?? 'http://stdio.invalid').origin;
    const dispatcher = this.#deps.dispatcher;
    return async (url, init) => {
      const target = new URL(url);
      const headers = new Headers(init?.headers);
      if (target.origin === origin) {
        if (server.entry.forwardClientToken && clientHeaders.authorization !== undefined) headers.set('authorization', clientHeaders.authorization);
        for (const [name, value] of Object.entries(server.headers)) headers.set(name, value);
      }
      const response = (await undiciFetch(target, { ...(init as object), headers, redirect: 'manual', dispatcher } as never)) as unknown as Response;
      if (response.body === null || !Number.isFinite(cap)) return response;
      return new Response(capped(response.body, cap, limit), { status: response.status, statusText: response.statusText, headers: response.headers });
    };
  }
}

/** The client's headers an upstream may see (only where its definition says so). */
export interface ClientHeaders {
  readonly authorization?: string | undefined;
}

export interface ResultSchema<T> {
  parse(value: unknown): T;
}

const NO_RECONNECT = { maxReconnectionDelay: 1000, initialReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 };

/** A body that errors (and aborts the request) once it has carried more than `cap` bytes. */
function capped(body: ReadableStream<Uint8Array>, cap: number, limit: AbortController | undefined): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > cap) {
          const error = new UpstreamFailure('too_large', `The MCP server's answer exceeded ${cap} bytes.`);
          controller.error(error);
          limit?.abort(error);
          return;
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

function anySignal(a: AbortSignal, b: AbortSignal | undefined): AbortSignal {
  return b === undefined ? a : AbortSignal.any([a, b]);
}

/** Maps what the SDK threw to an UpstreamFailure. */
export function failureOf(error: unknown, server: McpServer): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  if (error instanceof StreamableHTTPError && error.code === 404) {
    return new UpstreamFailure('session_expired', `MCP server "${server.name}" no longer knows this session.`);
  }
  const reason = (error as { cause?: unknown })?.cause ?? error;
  if (reason instanceof UpstreamFailure) return reason;
  const rpc = error as { code?: unknown; message?: unknown; data?: unknown };
  // The SDK's McpError: an answer from the upstream (its own error) or the request timed out (-32001).
  if (typeof rpc.code === 'number' && Number.isInteger(rpc.code)) {
    if (rpc.code === -32001) return new UpstreamFailure('timeout', `MCP server "${server.name}" did not answer within ${server.entry.timeoutMs} ms.`);
    if (rpc.code === -32000 && /closed/i.test(String(rpc.message))) return new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable (connection closed).`);
    const message = typeof rpc.message === 'string' ? rpc.message.replace(/^MCP error -?\d+: /, '').slice(0, 1000) : 'upstream error';
    return new UpstreamFailure('error', message, rpc.code, rpc.data);
  }
  if ((error as { name?: string })?.name === 'AbortError' || (error as { name?: string })?.name === 'TimeoutError') {
    return new UpstreamFailure('timeout', `MCP server "${server.name}" did not answer within ${server.entry.timeoutMs} ms.`);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable: ${message.slice(0, 300)}`);
}
