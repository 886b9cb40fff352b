import { StringDecoder } from 'node:string_decoder';
import { request as undiciRequest, type Dispatcher } from 'undici';
import type { McpServer } from './mcp-catalog.ts';
import type { UpstreamSession } from './mcp-session.ts';
import { UpstreamFailure, type ClientHeaders, type ResultSchema } from './mcp-upstream.ts';

// One request on an upstream Streamable HTTP session whose id the gateway holds: one POST
// through the gateway's agent (egress policy), the answer read as JSON or as an SSE stream
// up to our response, within the byte cap and the server's timeout. This is the hot path of
// every tools/call, so it is an undici dispatch handler fed the answer's chunks as they are
// parsed: no response stream, async iterator, AbortSignal or async resource per call (what
// undici's request() and the SDK Client add for the same bytes). Notifications and server
// requests on the stream are skipped (the gateway declares no client capabilities, so a
// server has none to send).

let nextId = 0;

export interface UpstreamPost {
  readonly dispatcher: Dispatcher;
  readonly server: McpServer;
  readonly session: UpstreamSession & { readonly id: string };
  readonly clientHeaders: ClientHeaders;
  readonly message: { method: string; params?: Record<string, unknown> | undefined };
  readonly schema: ResultSchema<unknown> & { safeParse?(value: unknown): unknown };
  readonly cap: number;
  readonly signal: AbortSignal | undefined;
}

export function postOnSession<T>(post: UpstreamPost): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    new AnswerReader(post, resolve as (value: unknown) => void, reject).start();
  });
}

/** The server URL split once per server definition (undici's request() parses it per call). */
interface Endpoint {
  readonly origin: string;
  readonly path: string;
  /** The server's own headers, names lower-cased. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

const endpoints = new WeakMap<McpServer, Endpoint>();

function endpointOf(server: McpServer): Endpoint {
  let endpoint = endpoints.get(server);
  if (endpoint === undefined) {
    const url = new URL(server.entry.url as string);
    const headers = Object.entries(server.headers).map(([name, value]) => [name.toLowerCase(), value] as const);
    endpoint = { origin: url.origin, path: url.search === '' ? url.pathname : `${url.pathname}${url.search}`, headers };
    endpoints.set(server, endpoint);
  }
  return endpoint;
}

/** An undici handler that reads one answer and settles the call exactly once. */
class AnswerReader implements Dispatcher.DispatchHandler {
  readonly #post: UpstreamPost;
  readonly #id = `gw-${++nextId}`;
  readonly #resolve: (value: unknown) => void;
  readonly #reject: (error: unknown) => void;
  #settled = false;
  #ended = false;
  #controller: Dispatcher.DispatchController | undefined;
  /** Why the request is to be aborted once undici starts it (timeout or cancel before that). */
  #abortReason: Error | undefined;
  #timer: NodeJS.Timeout | undefined;
  #seen = 0;
  /** JSON answer: its chunks; SSE answer: undefined, read line by line instead. */
  #chunks: Buffer[] | undefined;
  #decoder: StringDecoder | undefined;
  #pending = '';
  #data: string[] = [];

  constructor(post: UpstreamPost, resolve: (value: unknown) => void, reject: (error: unknown) => void) {
    this.#post = post;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  start(): void {
    const { server, session, message, signal } = this.#post;
    if (signal?.aborted === true) {
      this.#cancelled();
      return;
    }
    const endpoint = endpointOf(server);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': session.id,
      'mcp-protocol-version': session.version,
    };
    if (server.entry.forwardClientToken && this.#post.clientHeaders.authorization !== undefined) headers['authorization'] = this.#post.clientHeaders.authorization;
    for (const [name, value] of endpoint.headers) headers[name] = value;
    const body = JSON.stringify(message.params === undefined ? { jsonrpc: '2.0', id: this.#id, method: message.method } : { jsonrpc: '2.0', id: this.#id, method: message.method, params: message.params });
    // One timer and one listener: AbortSignal.timeout + AbortSignal.any cost more per call.
    this.#timer = setTimeout(this.#timedOut, server.entry.timeoutMs);
    this.#timer.unref();
    signal?.addEventListener('abort', this.#callerLeft, { once: true });
    try {
      this.#post.dispatcher.dispatch({ origin: endpoint.origin, path: endpoint.path, method: 'POST', headers, body }, this);
    } catch (error) {
      this.onResponseError(null, error as Error);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortReason !== undefined) controller.abort(this.#abortReason);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return;
    const server = this.#post.server;
    if (statusCode === 404) return this.#fail(new UpstreamFailure('session_expired', `MCP server "${server.name}" no longer knows this session.`), controller);
    if (statusCode >= 300) return this.#fail(new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable: it answered HTTP ${statusCode}.`), controller);
    if (String(headers['content-type'] ?? '').includes('text/event-stream')) this.#decoder = new StringDecoder('utf8');
    else this.#chunks = [];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Past our response, the rest is left (#answer).
    if (this.#settled) return;
    this.#seen += chunk.length;
    if (this.#seen > this.#post.cap) return this.#fail(new UpstreamFailure('too_large', `The MCP server's answer exceeded ${this.#post.cap} bytes.`), controller);
    if (this.#chunks !== undefined) this.#chunks.push(chunk);
    else this.#readEvents(chunk, controller);
  }

  onResponseEnd(): void {
    this.#ended = true;
    if (this.#settled) return;
    const server = this.#post.server;
    if (this.#chunks !== undefined) {
      if (this.#seen === 0) return this.#fail(new UpstreamFailure('unavailable', `MCP server "${server.name}" sent an empty answer.`));
      let response: Record<string, unknown>;
      try {
        response = responseOfJson(Buffer.concat(this.#chunks).toString('utf8'), this.#id, server);
      } catch (error) {
        return this.#fail(error as Error);
      }
      return this.#answer(response);
    }
    const last = this.#dispatchEvent();
    if (last !== undefined) return this.#answer(last);
    this.#fail(new UpstreamFailure('unavailable', `MCP server "${server.name}" ended the stream without answering.`));
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#ended = true;
    if (this.#settled) return;
    this.#fail(error instanceof UpstreamFailure ? error : unavailable(this.#post.server, error));
  }

  /** Feeds SSE bytes; settles on the event that answers our id (everything before it is skipped). */
  #readEvents(chunk: Buffer, controller: Dispatcher.DispatchController): void {
    // The unfinished line kept holds no line end (but perhaps a last CR): scan only what is new.
    const scanned = Math.max(0, this.#pending.length - 1);
    const pending = this.#pending + (this.#decoder as StringDecoder).write(chunk);
    let start = 0;
    for (let at = scanned; at < pending.length; at++) {
      const char = pending.charCodeAt(at);
      if (char !== 10 && char !== 13) continue;
      // A CR at the end of what arrived may be half of a CRLF: wait for the next chunk.
      if (char === 13 && at === pending.length - 1) break;
      const line = pending.slice(start, at);
      if (char === 13 && pending.charCodeAt(at + 1) === 10) at++;
      start = at + 1;
      if (line === '') {
        const found = this.#dispatchEvent();
        if (found !== undefined) {
          this.#answer(found, controller);
          return;
        }
      } else if (line.startsWith('data:')) {
        this.#data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
      }
    }
    this.#pending = pending.slice(start);
  }

  #dispatchEvent(): Record<string, unknown> | undefined {
    if (this.#data.length === 0) return undefined;
    const text = this.#data.length === 1 ? (this.#data[0] as string) : this.#data.join('\n');
    this.#data = [];
    try {
      const message = JSON.parse(text) as unknown;
      return isResponseTo(message, this.#id) ? (message as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Our response is read. The rest of a stream (usually just its end, parsed in the same read
   * right after) is not waited for: a stream still open once that read is done is left (its
   * connection closed), as an upstream that keeps it open would hold the connection.
   */
  #answer(response: Record<string, unknown>, controller?: Dispatcher.DispatchController): void {
    let result: unknown;
    try {
      result = resultOf(response, this.#post);
    } catch (error) {
      this.#fail(error instanceof UpstreamFailure ? error : unavailable(this.#post.server, error), controller);
      return;
    }
    this.#settle();
    this.#resolve(result);
    if (controller !== undefined && !this.#ended) {
      queueMicrotask(() => {
        if (!this.#ended) controller.abort(LEFT);
      });
    }
  }

  #fail(error: Error, controller?: Dispatcher.DispatchController): void {
    if (this.#settled) return;
    this.#settle();
    this.#reject(error);
    if (!this.#ended) this.#abort(controller, LEFT);
  }

  #settle(): void {
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#post.signal?.removeEventListener('abort', this.#callerLeft);
  }

  #abort(controller: Dispatcher.DispatchController | undefined, reason: Error): void {
    const active = controller ?? this.#controller;
    if (active !== undefined) active.abort(reason);
    else this.#abortReason = reason;
  }

  readonly #timedOut = (): void => {
    const server = this.#post.server;
    this.#fail(new UpstreamFailure('timeout', `MCP server "${server.name}" did not answer within ${server.entry.timeoutMs} ms.`));
  };

  readonly #callerLeft = (): void => {
    if (this.#settled) return;
    // The upstream is told only about a request it may have received.
    if (this.#controller !== undefined) cancelUpstream(this.#post, this.#id);
    this.#cancelled();
  };

  #cancelled(): void {
    this.#fail(new UpstreamFailure('timeout', 'The call was cancelled.'));
  }
}

function unavailable(server: McpServer, error: unknown): UpstreamFailure {
  const message = error instanceof Error ? error.message : String(error);
  return new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable: ${message.slice(0, 300)}`);
}

/** Why a settled call's request is aborted (never seen: the call has its outcome already). A prebuilt error: no stack per call. */
const LEFT = new Error('The answer was read.');

/** The client left: the upstream is told, as the SDK client would (fire and forget). */
function cancelUpstream(post: UpstreamPost, id: string): void {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': post.session.id, 'mcp-protocol-version': post.session.version };
  for (const [name, value] of Object.entries(post.server.headers)) headers[name.toLowerCase()] = value;
  undiciRequest(post.server.entry.url as string, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'The client cancelled the request.' } }),
    dispatcher: post.dispatcher,
    signal: AbortSignal.timeout(post.server.entry.timeoutMs),
  }).then(
    (answer) => answer.body.destroy(),
    () => undefined,
  );
}

function resultOf(response: Record<string, unknown>, post: UpstreamPost): unknown {
  const error = response['error'];
  if (typeof error === 'object' && error !== null) {
    const { code, message, data } = error as { code?: unknown; message?: unknown; data?: unknown };
    throw new UpstreamFailure('error', typeof message === 'string' ? message.slice(0, 1000) : 'upstream error', typeof code === 'number' && Number.isInteger(code) ? code : -32603, data);
  }
  const result = response['result'];
  const schema = post.schema;
  if (schema.safeParse !== undefined) {
    const parsed = schema.safeParse(result) as { success: boolean; data?: unknown };
    if (!parsed.success) throw new UpstreamFailure('error', `MCP server "${post.server.name}" answered ${post.message.method} with an invalid result.`, -32603);
    return parsed.data;
  }
  return schema.parse(result);
}

function responseOfJson(text: string, id: string, server: McpServer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UpstreamFailure('unavailable', `MCP server "${server.name}" sent an answer that is not JSON.`);
  }
  const found = (Array.isArray(parsed) ? parsed : [parsed]).find((message) => isResponseTo(message, id));
  if (found === undefined) throw new UpstreamFailure('unavailable', `MCP server "${server.name}" did not answer the request.`);
  return found as Record<string, unknown>;
}

function isResponseTo(message: unknown, id: string): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const record = message as Record<string, unknown>;
  return record['id'] === id && !('method' in record) && ('result' in record || 'error' in record);
}
