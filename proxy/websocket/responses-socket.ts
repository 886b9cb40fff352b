import type { Readable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { GatewayError, toErrorBody, type ErrorCode } from '../errors.ts';
import { CLOSE, type Session, type SocketLimits } from './socket-registry.ts';

// Responses API WebSocket mode (OpenAI's "WebSocket mode" for /v1/responses, what Codex CLI
// opens first): the client sends `response.create` events, each the body of a
// POST /v1/responses without `stream`; the gateway answers with the same events the SSE
// stream carries, one JSON text frame each. Every turn is dispatched through the gateway's
// own POST /v1/responses with stream: true (websocket-plugin.ts), so routing, fallbacks
// before the first event, guardrails, rate limits, budgets, cost, the log record and the
// trace apply per response, to every provider the HTTP route serves.
//
// `previous_response_id` with `store: false` refers to the connection's most recent response,
// kept in memory as OpenAI's server does: the gateway sends the provider the whole input
// (that response's input and output, then the new items). With `store` left on, the id is
// the provider's and goes through as it is.

/** Runs one turn through the gateway's POST /v1/responses; the answer's status and body as it streams. */
export type TurnDispatcher = (body: string, signal: AbortSignal) => Promise<{ status: number; body: Readable }>;

const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Consecutive frames that are not a usable event before the socket is closed. */
const MAX_BAD_FRAMES = 16;
/** Cached input and output of the last store:false response, most (serialised JSON length). */
const MAX_CACHED_CHARS = 8 * 1024 * 1024;
/** What all connections of the process may hold cached together; past it a continuation is not cached. */
const MAX_CACHED_CHARS_TOTAL = 256 * 1024 * 1024;
let cachedCharsTotal = 0;

interface CachedResponse {
  readonly id: string;
  /** The input items the provider got, then its output items. */
  readonly items: readonly unknown[];
  readonly chars: number;
}

export class ResponsesSession implements Session {
  readonly socket: WebSocket;
  readonly keyId: string | undefined;
  readonly #dispatch: TurnDispatcher;
  readonly #limits: SocketLimits;
  #turn: AbortController | undefined;
  #cached: CachedResponse | undefined;
  #badFrames = 0;
  #draining = false;
  #idle: NodeJS.Timeout | undefined;

  constructor(socket: WebSocket, keyId: string | undefined, dispatch: TurnDispatcher, limits: SocketLimits) {
    this.socket = socket;
    this.keyId = keyId;
    this.#dispatch = dispatch;
    this.#limits = limits;
    const lifetime = setTimeout(() => this.#close(CLOSE.normal, 'session duration limit reached'), limits.maxSessionMs).unref();
    this.#touch();
    socket.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    socket.once('close', () => {
      clearTimeout(lifetime);
      if (this.#idle !== undefined) clearTimeout(this.#idle);
      this.#turn?.abort();
      this.#forget();
    });
  }

  drain(): void {
    this.#draining = true;
    if (this.#turn === undefined) this.#close(CLOSE.goingAway, 'server shutting down');
    else setTimeout(() => this.#close(CLOSE.goingAway, 'server shutting down'), this.#limits.drainGraceMs).unref();
  }

  #touch(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.#close(CLOSE.normal, 'idle timeout'), this.#limits.idleTimeoutMs).unref();
  }

  #close(code: number, reason: string): void {
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) this.socket.close(code, reason);
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    this.#touch();
    if (isBinary) return this.#refuse('AIGW_ERR_INVALID_BODY', 'Binary frames are not accepted here: send each event as a JSON text frame.', null);
    let event: unknown;
    try {
      event = JSON.parse(rawText(data));
    } catch (error) {
      return this.#refuse('AIGW_ERR_INVALID_JSON', `Event is not valid JSON: ${(error as Error).message}`, null);
    }
    if (typeof event !== 'object' || event === null || Array.isArray(event)) return this.#refuse('AIGW_ERR_INVALID_BODY', 'An event is a JSON object with a "type".', 'type');
    const { type, ...body } = event as Record<string, unknown>;
    if (type !== 'response.create') {
      const named = typeof type === 'string' ? `"${type.slice(0, 64)}"` : 'missing';
      return this.#refuse('AIGW_ERR_INVALID_BODY', `Unsupported event type ${named}: this connection takes response.create.`, 'type');
    }
    if (this.#draining) return this.#close(CLOSE.goingAway, 'server shutting down');
    if (this.#turn !== undefined) return this.#refuse('AIGW_ERR_INVALID_BODY', 'A response is already in progress on this connection; send the next response.create after it completes.', null);
    if (body['background'] === true) return this.#refuse('AIGW_ERR_INVALID_BODY', 'background is not supported over WebSocket.', 'background');
    this.#badFrames = 0;
    void this.#runTurn(body);
  }

  /** An error event for a frame the gateway cannot use; a client that sends only such frames is closed. */
  #refuse(code: ErrorCode, message: string, param: string | null, extraCode?: string): void {
    this.#sendError(new GatewayError(code, message, { param }), extraCode);
    if (++this.#badFrames >= MAX_BAD_FRAMES) this.#close(CLOSE.policy, 'too many invalid events');
  }

  #sendError(error: GatewayError, codeOverride?: string): void {
    const body = toErrorBody(error);
    if (codeOverride !== undefined) body.error.code = codeOverride;
    this.#send(JSON.stringify({ type: 'error', status: error.status, error: body.error }));
  }

  /** Sends one frame; a client whose unread frames pile up past the cap is closed (1008). */
  #send(text: string): boolean {
    if (this.socket.readyState !== this.socket.OPEN) return false;
    if (this.socket.bufferedAmount + text.length > this.#limits.maxBufferedBytes) {
      this.#close(CLOSE.policy, 'client is not reading: send buffer full');
      this.#turn?.abort();
      return false;
    }
    this.socket.send(text);
    return true;
  }

  async #runTurn(requested: Record<string, unknown>): Promise<void> {
    const controller = new AbortController();
    this.#turn = controller;
    try {
      const body = this.#withConnectionState(requested);
      if (body === undefined) return;
      const { status, body: answer } = await this.#dispatch(JSON.stringify({ ...body, stream: true }), controller.signal);
      if (status !== 200) {
        const text = await readBounded(answer, MAX_ERROR_BODY_BYTES);
        this.#send(JSON.stringify({ type: 'error', status, error: errorOf(text, status) }));
        return;
      }
      const completed = await this.#relayEvents(answer, body['store'] === false);
      if (completed !== undefined && body['store'] === false) this.#remember(completed, body['input']);
    } catch (error) {
      if (!controller.signal.aborted) this.#sendError(new GatewayError('AIGW_ERR_INTERNAL', `The response could not be completed: ${(error as Error).message}`.slice(0, 300)));
    } finally {
      this.#turn = undefined;
      if (this.#draining) this.#close(CLOSE.goingAway, 'server shutting down');
    }
  }

  /** The body the provider gets: with store:false, the previous response's items in place of its id. */
  #withConnectionState(body: Record<string, unknown>): Record<string, unknown> | undefined {
    const previous = body['previous_response_id'];
    if (body['store'] !== false || previous === undefined || previous === null) return body;
    if (this.#cached === undefined || this.#cached.id !== previous) {
      this.#sendError(
        new GatewayError('AIGW_ERR_INVALID_BODY', `Previous response "${String(previous).slice(0, 128)}" is not available on this connection; send the full input without previous_response_id.`, {
          param: 'previous_response_id',
        }),
        'previous_response_not_found',
      );
      return undefined;
    }
    const { previous_response_id: _dropped, ...rest } = body;
    return { ...rest, input: [...this.#cached.items, ...inputItems(body['input'])] };
  }

  #remember(response: Record<string, unknown>, input: unknown): void {
    this.#forget();
    const id = response['id'];
    const output = response['output'];
    if (typeof id !== 'string' || !Array.isArray(output)) return;
    const items = [...inputItems(input), ...output];
    const chars = JSON.stringify(items).length;
    // Too large, or the process holds enough: the next continuation is previous_response_not_found.
    if (chars > MAX_CACHED_CHARS || cachedCharsTotal + chars > MAX_CACHED_CHARS_TOTAL) return;
    cachedCharsTotal += chars;
    this.#cached = { id, items, chars };
  }

  #forget(): void {
    if (this.#cached !== undefined) cachedCharsTotal -= this.#cached.chars;
    this.#cached = undefined;
  }

  /** Relays each SSE event's JSON as one text frame; returns the completed response when asked to keep it. */
  async #relayEvents(answer: Readable, keep: boolean): Promise<Record<string, unknown> | undefined> {
    let pending = '';
    let completed: Record<string, unknown> | undefined;
    const emit = (block: string): void => {
      const data = dataOf(block);
      if (data === undefined || data === '[DONE]') return;
      if (keep && data.includes('"response.completed"')) {
        try {
          const event = JSON.parse(data) as Record<string, unknown>;
          if (event['type'] === 'response.completed' && typeof event['response'] === 'object' && event['response'] !== null) completed = event['response'] as Record<string, unknown>;
        } catch {
          // Relayed as it is; only the connection's cache misses it.
        }
      }
      this.#send(data);
    };
    for await (const chunk of answer) {
      pending += (chunk as Buffer).toString('utf8');
      let end = pending.indexOf('\n\n');
      while (end !== -1) {
        emit(pending.slice(0, end));
        pending = pending.slice(end + 2);
        end = pending.indexOf('\n\n');
      }
      // The pipeline caps one event (4 MiB); anything longer is not an event.
      if (pending.length > this.#limits.maxMessageBytes) throw new Error('an event from the pipeline exceeded the message cap');
    }
    if (pending.trim() !== '') emit(pending);
    return completed;
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/** The JSON of an SSE block: its data lines joined (the gateway's frames carry one). */
function dataOf(block: string): string | undefined {
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const value = line.slice(line.charAt(5) === ' ' ? 6 : 5).replace(/\r$/, '');
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}

/** `input` as items: a string is one user message. */
function inputItems(input: unknown): unknown[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input : [];
}

function errorOf(text: string, status: number): Record<string, unknown> {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === 'object' && parsed.error !== null) return parsed.error as Record<string, unknown>;
  } catch {
    // Not JSON: described below.
  }
  return { message: `The request failed with status ${status}.`, type: 'api_error', param: null, code: null };
}

async function readBounded(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) break;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
