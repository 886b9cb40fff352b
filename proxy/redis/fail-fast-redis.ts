// One ioredis client for a store on the request path (rate-limit counters, response cache,
// semantic index), with the failure behaviour those stores need: every call answers or
// rejects within a short deadline with the store's "unavailable" error (code
// AIGW_ERR_STORE_UNAVAILABLE), which the caller turns into fail-open, fail-closed or a MISS.
// Nothing is queued while disconnected (enableOfflineQueue off), nothing is resent after a
// reconnect (a resent consume would count twice), in-flight calls are capped, and a socket
// that stops answering is destroyed and reconnected with backoff in the background.

import { Redis, type RedisOptions } from 'ioredis';

export interface FailFastRedisOptions {
  /** redis:// or rediss:// URL; its password is never logged or put in errors. */
  readonly url: string;
  /** Longest a call may take before it rejects as unavailable. */
  readonly commandTimeoutMs: number;
  /** Names the component in error messages, e.g. "response cache". */
  readonly component: string;
  /** Lua scripts to define on the client (ioredis `scripts`). */
  readonly scripts: NonNullable<RedisOptions['scripts']>;
  /** Builds the store's "unavailable" error. */
  readonly unavailable: (message: string, options?: { cause?: unknown }) => Error;
}

/** The URL with any password replaced, for messages and logs. */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '<invalid Redis URL>';
  }
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}

/** Beyond this many unanswered calls, Redis is too slow to be worth waiting on. */
const MAX_IN_FLIGHT = 10_000;

/** A Redis client whose calls fail fast; `S` names the methods `scripts` defines. */
export class FailFastRedis<S extends object> {
  readonly client: Redis & S;
  readonly #timeoutMs: number;
  readonly #where: string;
  readonly #component: string;
  readonly #unavailable: FailFastRedisOptions['unavailable'];
  #inFlight = 0;
  #closed = false;
  #lastError: Error | undefined;
  #connecting: Promise<void> | undefined;

  constructor(options: FailFastRedisOptions) {
    this.#timeoutMs = options.commandTimeoutMs;
    if (!(this.#timeoutMs > 0)) throw new RangeError(`commandTimeoutMs must be positive, got ${options.commandTimeoutMs}`);
    this.#where = redactRedisUrl(options.url);
    this.#component = options.component;
    this.#unavailable = options.unavailable;
    const client = new Redis(options.url, {
      commandTimeout: this.#timeoutMs,
      // Connecting may take longer than one command; calls do not wait for it (see #ready).
      connectTimeout: Math.max(1_000, this.#timeoutMs * 4),
      socketTimeout: Math.max(1_000, this.#timeoutMs * 20),
      disconnectTimeout: 200,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (times) => Math.min(2_000, 25 * 2 ** Math.min(times, 7)) + Math.floor(Math.random() * 50),
      enableAutoPipelining: true,
      scripts: options.scripts,
    });
    // Without a listener ioredis prints every connection error; keep the latest as the cause.
    client.on('error', (error: Error) => {
      this.#lastError = error;
    });
    // `scripts` adds the methods at run time; the cast only names them for TypeScript.
    this.client = client as Redis & S;
  }

  /** Runs `send` within the deadline; every failure becomes the store's "unavailable" error. */
  async call<T>(send: (client: Redis & S) => Promise<T>): Promise<T> {
    if (this.#closed) throw this.#unavailable(`${this.#component} at ${this.#where} is closed`);
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      throw this.#unavailable(`${this.#component} at ${this.#where} is not keeping up (${MAX_IN_FLIGHT} calls in flight)`);
    }
    this.#inFlight++;
    try {
      return await withDeadline(
        this.#ready().then(() => send(this.client)),
        this.#timeoutMs,
      );
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw this.#unavailable(`${this.#component} at ${this.#where} unavailable: ${reason}`, { cause });
    } finally {
      this.#inFlight--;
    }
  }

  /** Waits (bounded) for the connection, then runs `warmUp` (e.g. loads a script). */
  async connect(timeoutMs: number, warmUp: (client: Redis & S) => Promise<unknown>): Promise<void> {
    await withDeadline(this.#ready(), timeoutMs);
    await withDeadline(warmUp(this.client), timeoutMs);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.client.status === 'ready') {
      await withDeadline(this.client.quit(), this.#timeoutMs * 4).catch(() => undefined);
    }
    this.client.disconnect();
  }

  /**
   * Resolves when commands can be sent: waits for a connection being made (bounded by the
   * caller's deadline), fails at once while Redis is known to be down.
   */
  #ready(): Promise<void> {
    const client = this.client;
    switch (client.status) {
      case 'ready':
        return Promise.resolve();
      case 'wait':
      case 'connecting':
      case 'connect':
        this.#connecting ??= new Promise<void>((resolve, reject) => {
          const settle = (error?: Error): void => {
            client.off('ready', onReady);
            client.off('close', onClose);
            this.#connecting = undefined;
            if (error === undefined) resolve();
            else reject(error);
          };
          const onReady = (): void => settle();
          const onClose = (): void => settle(this.#lastError ?? new Error('connection closed'));
          client.on('ready', onReady);
          client.on('close', onClose);
        });
        return this.#connecting;
      default:
        return Promise.reject(this.#lastError ?? new Error(`connection is ${client.status}`));
    }
  }
}

/** Rejects after `ms` unless `promise` settles first; the timer never keeps the process alive. */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
