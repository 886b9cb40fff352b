import { StringDecoder } from 'node:string_decoder';
import { request as undiciRequest, type Dispatcher } from 'undici';
import type { McpServer } from './mcp-catalog.ts';
import type { UpstreamSession } from './mcp-session.ts';
import { UpstreamFailure, type ClientHeaders, type ResultSchema } from './mcp-upstream.ts';

// One request on an upstream Streamable HTTP session whose id the gateway holds: one POST
// through the gateway's agent (egress policy), the answer read as JSON or as an SSE stream
// up to our response, within the byte cap and the server's timeout. This is the hot path of
// every tools/call; the SDK Client would add web streams, an SSE parser stream and a zod
// parse per answer for the same bytes. Notifications and server requests on the stream are
// skipped (the gateway declares no client capabilities, so a server has none to send).

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

export async function postOnSession<T>(post: UpstreamPost): Promise<T> {
  const { server, signal } = post;
  const id = `gw-${++nextId}`;
  // One controller, a timer and a listener: AbortSignal.timeout + AbortSignal.any cost more per call.
  const timeout = { aborted: false };
  const controller = new AbortController();
  const timer = setTimeout(() => {
    timeout.aborted = true;
    controller.abort();
  }, server.entry.timeoutMs);
  timer.unref();
  const onAbort = (): void => controller.abort();
  if (signal?.aborted === true) controller.abort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await postWithin<T>(post, id, controller.signal, timeout);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

async function postWithin<T>(post: UpstreamPost, id: string, aborted: AbortSignal, timeout: { readonly aborted: boolean }): Promise<T> {
  const { server, session } = post;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': session.id,
    'mcp-protocol-version': session.version,
  };
  if (server.entry.forwardClientToken && post.clientHeaders.authorization !== undefined) headers['authorization'] = post.clientHeaders.authorization;
  for (const [name, value] of Object.entries(server.headers)) headers[name.toLowerCase()] = value;
  let answer: Dispatcher.ResponseData;
  try {
    answer = await undiciRequest(server.entry.url as string, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method: post.message.method, ...(post.message.params === undefined ? {} : { params: post.message.params }) }),
      dispatcher: post.dispatcher,
      signal: aborted,
    });
  } catch (error) {
    throw failureOfAbort(error, post, timeout, id);
  }
  // Leaving a stream early destroys it, and undici then emits "Request aborted" on it: expected, not an uncaught error.
  answer.body.on('error', () => undefined);
  try {
    if (answer.statusCode === 404) throw new UpstreamFailure('session_expired', `MCP server "${server.name}" no longer knows this session.`);
    if (answer.statusCode < 200 || answer.statusCode >= 300) {
      throw new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable: it answered HTTP ${answer.statusCode}.`);
    }
    const type = String(answer.headers['content-type'] ?? '');
    const response = type.includes('text/event-stream') ? await responseOnStream(answer.body, id, post.cap, server) : responseOfJson(await readCapped(answer.body, post.cap, server), id, server);
    return resultOf(response, post) as T;
  } catch (error) {
    throw failureOfAbort(error, post, timeout, id);
  } finally {
    // An SSE answer is left once its response is read: a prebuilt error (no stack to capture per call).
    answer.body.destroy(answer.body.readableEnded ? undefined : LEFT);
  }
}

/** Why a read answer's stream is closed early (never seen: its error event is ignored). */
const LEFT = new Error('The answer was read.');

function failureOfAbort(error: unknown, post: UpstreamPost, timeout: { readonly aborted: boolean }, id: string): unknown {
  if (error instanceof UpstreamFailure) return error;
  if (timeout.aborted) return new UpstreamFailure('timeout', `MCP server "${post.server.name}" did not answer within ${post.server.entry.timeoutMs} ms.`);
  if (post.signal?.aborted === true) {
    cancelUpstream(post, id);
    return new UpstreamFailure('timeout', 'The call was cancelled.');
  }
  const message = error instanceof Error ? error.message : String(error);
  return new UpstreamFailure('unavailable', `MCP server "${post.server.name}" is unavailable: ${message.slice(0, 300)}`);
}

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
    return throwing(new UpstreamFailure('error', typeof message === 'string' ? message.slice(0, 1000) : 'upstream error', typeof code === 'number' && Number.isInteger(code) ? code : -32603, data));
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

function throwing(error: Error): never {
  throw error;
}

async function readCapped(body: Dispatcher.ResponseData['body'], cap: number, server: McpServer): Promise<string> {
  const chunks: Buffer[] = [];
  let seen = 0;
  for await (const chunk of body) {
    seen += (chunk as Buffer).length;
    if (seen > cap) throw new UpstreamFailure('too_large', `The MCP server's answer exceeded ${cap} bytes.`);
    chunks.push(chunk as Buffer);
  }
  if (seen === 0) throw new UpstreamFailure('unavailable', `MCP server "${server.name}" sent an empty answer.`);
  return Buffer.concat(chunks).toString('utf8');
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

/** Reads SSE events until the response to `id`; everything before it is skipped. */
async function responseOnStream(body: Dispatcher.ResponseData['body'], id: string, cap: number, server: McpServer): Promise<Record<string, unknown>> {
  const decoder = new StringDecoder('utf8');
  let seen = 0;
  let pending = '';
  let data: string[] = [];
  const dispatch = (): Record<string, unknown> | undefined => {
    if (data.length === 0) return undefined;
    const text = data.join('\n');
    data = [];
    try {
      const message = JSON.parse(text) as unknown;
      return isResponseTo(message, id) ? (message as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  // Leaving the loop must not destroy the stream (node's destroy would build an AbortError per call); the caller does.
  for await (const chunk of body.iterator({ destroyOnReturn: false })) {
    seen += (chunk as Buffer).length;
    if (seen > cap) throw new UpstreamFailure('too_large', `The MCP server's answer exceeded ${cap} bytes.`);
    // The unfinished line kept holds no line end (but perhaps a last CR): scan only what is new.
    const scanned = Math.max(0, pending.length - 1);
    pending += decoder.write(chunk as Buffer);
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
        const found = dispatch();
        if (found !== undefined) return found;
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
      }
    }
    pending = pending.slice(start);
  }
  const last = dispatch();
  if (last !== undefined) return last;
  throw new UpstreamFailure('unavailable', `MCP server "${server.name}" ended the stream without answering.`);
}

function isResponseTo(message: unknown, id: string): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const record = message as Record<string, unknown>;
  return record['id'] === id && !('method' in record) && ('result' in record || 'error' in record);
}
