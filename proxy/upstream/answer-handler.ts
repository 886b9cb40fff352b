import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { errors, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { BodyPrefix } from './read-body.ts';
import {
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_HEADERS_TIMEOUT_MS,
  discard,
  redactorOf,
  upstreamFailure,
  urlOf,
  type GuardedRequest,
} from './guarded-call.ts';

// undici's dispatch handler for an upstream answer the gateway may read whole (issue 32).
// `dispatcher.request` gives every answer a stream (undici's BodyReadable) that the plain
// answer was then read from chunk by chunk: a stream, its buffer, its events and ticks per
// answer. Here a 2xx answer the caller wants read whole is gathered straight from the
// connection, up to `limit` bytes, and no stream is made. Every other answer — an error
// status, a stream, or a plain answer past `limit` (its prefix in hand) — gets the same
// BodyReadable and abort handling as `dispatcher.request`'s handler (api-request.js), so
// what reads it later sees no difference. Timeouts stay the client's (dispatch options).

type Body = Dispatcher.ResponseData['body'];
type BodyReadableClass = new (options: {
  resume: () => void;
  abort: (reason?: Error) => void;
  contentType?: string | string[] | undefined;
  contentLength?: number | null;
}) => Body;

// The very stream class `dispatcher.request` uses (undici has no export of it).
const BodyReadable = (createRequire(import.meta.url)('undici/lib/api/readable.js') as { Readable: BodyReadableClass }).Readable;

/** Decides from a 2xx answer's headers whether it is read whole here. */
export type CollectRule = (headers: IncomingHttpHeaders) => boolean;

export interface DispatchedAnswer {
  readonly response: AnswerResponse;
  /** A collected answer: all of it (`ended`), or its first bytes past `limit` with the rest in `response.body`. Undefined: not collected. */
  readonly prefix: BodyPrefix | undefined;
}

const noop = (): void => undefined;
const NO_CONTEXT: object = Object.freeze({});

/** The response data `dispatcher.request` resolves with, plus `redact`; a collected answer's body is made only if asked for. */
export class AnswerResponse {
  readonly statusCode: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  readonly trailers: Record<string, string> = {};
  readonly opaque = null;
  readonly context: object;
  readonly redact: (text: string) => string;
  #body: Body | undefined;

  constructor(statusCode: number, statusText: string, headers: IncomingHttpHeaders, context: object, redact: (text: string) => string) {
    this.statusCode = statusCode;
    this.statusText = statusText;
    this.headers = headers;
    this.context = context;
    this.redact = redact;
  }

  /** The answer's stream; for one read whole already, an empty ended one (so dump/destroy still work). */
  get body(): Body {
    if (this.#body === undefined) {
      this.#body = new BodyReadable({ resume: noop, abort: noop, contentType: this.headers['content-type'] });
      this.#body.push(null);
    }
    return this.#body;
  }

  /** @internal */
  setBody(body: Body): void {
    this.#body = body;
  }
}

/**
 * guardedCall for an inference answer: a 2xx answer `collect` accepts (by its headers) is
 * read here, up to `limit` bytes, without a stream — `prefix` holds it (or its first bytes,
 * the rest in `response.body`). Other answers come as from guardedCall. Same egress policy,
 * timeouts, redirect refusal, redaction and error mapping (a collected body's failure maps
 * as the attempt mapped it after reading; an egress denial comes only before the headers).
 *
 * With `untilData`, a 2xx answer that is not collected (a stream) settles only once its first
 * bytes are in its stream, and fails if it ends, breaks or is aborted before them: a stream
 * that breaks before its first byte is a failure the strategy can retry or fall back from.
 * The handler sees the bytes arrive; nothing listens on the stream to learn it.
 */
export function guardedAnswer(request: GuardedRequest, limit: number, collect: CollectRule, untilData = false): Promise<DispatchedAnswer> {
  const url = urlOf(request.url);
  const options: Dispatcher.DispatchOptions = {
    origin: url.origin,
    path: url.path,
    method: request.method,
    headers: request.headers,
    body: request.body ?? null,
    headersTimeout: request.headersTimeoutMs ?? request.requestTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    bodyTimeout: request.bodyTimeoutMs ?? request.requestTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
  };
  // One promise, settled by the handler with the final answer or the mapped failure.
  const settle = Promise.withResolvers<DispatchedAnswer>();
  const handler = new AnswerHandler(request, options, limit, collect, settle, untilData);
  try {
    request.dispatcher.dispatch(options, handler);
  } catch (error) {
    handler.onResponseError(null, error as Error);
  }
  return settle.promise;
}

interface Settle {
  resolve(answer: DispatchedAnswer): void;
  reject(error: unknown): void;
}

class AnswerHandler implements Dispatcher.DispatchHandler {
  readonly #request: GuardedRequest;
  readonly #options: Dispatcher.DispatchOptions;
  readonly #limit: number;
  readonly #collect: CollectRule;
  #settle: Settle | null;
  #signal: AbortSignal | undefined;
  #reason: Error | null = null;
  #controller: Dispatcher.DispatchController | null = null;
  #context: object = NO_CONTEXT;
  #response: AnswerResponse | null = null;
  /** Set while a collected answer is gathered. */
  #chunks: Buffer[] | null = null;
  #size = 0;
  /** The stream of an answer that is not (or no longer) collected. */
  #res: Body | null = null;
  /** Settle a stream's answer on its first bytes (`untilData`), not on its headers. */
  readonly #untilData: boolean;
  /** Its answer, until those bytes arrive. */
  #awaitingData: AnswerResponse | null = null;
  /**
   * The abort listener: a function, not the handler itself with a handleEvent method. Node's
   * EventTarget wraps an object listener in an async closure; measured, that kept every
   * call's objects alive through the next scavenges (docs/performance.md).
   */
  readonly #onAbort = (): void => this.#aborted();

  constructor(request: GuardedRequest, options: Dispatcher.DispatchOptions, limit: number, collect: CollectRule, settle: Settle, untilData: boolean) {
    this.#request = request;
    this.#untilData = untilData;
    this.#options = options;
    this.#limit = limit;
    this.#collect = collect;
    this.#settle = settle;
    const signal = request.signal;
    if (signal?.aborted === true) this.#reason = (signal.reason as Error | undefined) ?? new errors.RequestAbortedError();
    else if (signal !== undefined) {
      signal.addEventListener('abort', this.#onAbort);
      this.#signal = signal;
    }
  }

  #aborted(): void {
    const signal = this.#signal;
    if (signal === undefined) return;
    this.#unlisten();
    this.#reason = (signal.reason as Error | undefined) ?? new errors.RequestAbortedError();
    // A stream still waiting for its first bytes fails with the reason, as its stream does.
    if (this.#awaitingData !== null) this.#failBeforeData(this.#reason);
    const res = this.#res;
    if (res !== null) {
      this.#res = null;
      destroy(res, this.#reason);
    } else if (this.#controller !== null) {
      this.#controller.abort(this.#reason);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    if (this.#reason !== null) {
      controller.abort(this.#reason);
      return;
    }
    this.#controller = controller;
    if (typeof context === 'object' && context !== null) this.#context = context;
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusText?: string): void {
    if (statusCode < 200 || this.#response !== null) return;
    const request = this.#request;
    const response = new AnswerResponse(statusCode, statusText ?? '', headers, this.#context, redactorOf(request.headers, request.secrets));
    this.#response = response;
    if (statusCode < 300 && this.#collect(headers)) {
      this.#chunks = [];
      return;
    }
    this.#openBody(controller, response);
    if (statusCode >= 300 && statusCode < 400) {
      // Never followed nor passed on: a provider cannot steer the gateway or the client elsewhere.
      // Dropped after this callback (not inside undici's parser), as it was after `dispatcher.request` resolved.
      this.#fail(new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${request.upstream} answered with a redirect (${statusCode}); redirects are not followed.`));
      const body = response.body;
      queueMicrotask(() => discard(body));
      return;
    }
    if (this.#untilData && statusCode < 300) this.#awaitingData = response;
    else this.#resolve({ response, prefix: undefined });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const chunks = this.#chunks;
    if (chunks !== null) {
      chunks.push(chunk);
      this.#size += chunk.length;
      if (this.#size <= this.#limit) return;
      // Too large to hold here: the rest is read on from a stream (relayed, or read whole, capped).
      this.#chunks = null;
      const response = this.#response as AnswerResponse;
      this.#openBody(controller, response);
      this.#resolve({ response, prefix: { chunks, size: this.#size, ended: false } });
      return;
    }
    if (this.#res !== null && !this.#res.push(chunk)) controller.pause();
    const awaiting = this.#awaitingData;
    if (awaiting !== null && chunk.length > 0) {
      this.#awaitingData = null;
      this.#resolve({ response: awaiting, prefix: undefined });
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    const response = this.#response;
    if (response !== null && typeof trailers === 'object' && trailers !== null) {
      const into = response.trailers as Record<string, unknown>;
      for (const key of Object.keys(trailers)) {
        if (key === '__proto__') Object.defineProperty(into, key, { value: trailers[key], enumerable: true, configurable: true, writable: true });
        else into[key] = trailers[key];
      }
    }
    const chunks = this.#chunks;
    if (chunks !== null && response !== null) {
      this.#chunks = null;
      this.#unlisten();
      this.#resolve({ response, prefix: { chunks, size: this.#size, ended: true } });
      return;
    }
    this.#res?.push(null);
    if (this.#awaitingData !== null) {
      this.#failBeforeData(Object.assign(new Error('the stream ended before any data'), { code: 'UND_ERR_SOCKET' }));
      this.#unlisten();
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#chunks = null;
    this.#awaitingData = null;
    this.#fail(error);
    const res = this.#res;
    if (res !== null) {
      this.#res = null;
      // As api-request.js: queued handlers run before the stream is destroyed.
      queueMicrotask(() => destroy(res, error));
    }
    const body = this.#options.body;
    if (body !== null && typeof body === 'object' && typeof (body as { pipe?: unknown }).pipe === 'function') {
      const stream = body as NodeJS.ReadableStream & { destroy(error?: Error): void };
      stream.on('error', noop);
      stream.destroy(error);
    }
    this.#unlisten();
  }

  #openBody(controller: Dispatcher.DispatchController, response: AnswerResponse): void {
    const length = response.headers['content-length'];
    const res = new BodyReadable({
      resume: () => controller.resume(),
      abort: (reason) => controller.abort(reason as Error),
      contentType: response.headers['content-type'],
      contentLength: this.#options.method !== 'HEAD' && length ? Number(length) : null,
    });
    response.setBody(res);
    this.#res = res;
    // As api-request.js: the abort listener lives until the stream closes.
    if (this.#signal !== undefined) res.on('close', () => this.#unlisten());
  }

  #resolve(answer: DispatchedAnswer): void {
    const settle = this.#settle;
    if (settle === null) return;
    this.#settle = null;
    settle.resolve(answer);
  }

  #fail(error: Error): void {
    const settle = this.#settle;
    if (settle === null) return;
    this.#settle = null;
    const request = this.#request;
    settle.reject(upstreamFailure(error, request.upstream, request.requestTimeoutMs, request.egressParam));
  }

  /** A stream that ended or was aborted before its first bytes: the attempt's failure. */
  #failBeforeData(error: Error): void {
    this.#awaitingData = null;
    this.#fail(error);
  }

  #unlisten(): void {
    const signal = this.#signal;
    if (signal === undefined) return;
    this.#signal = undefined;
    signal.removeEventListener('abort', this.#onAbort);
  }
}

function destroy(stream: Body, error: Error): void {
  stream.on('error', noop);
  stream.destroy(error);
}
