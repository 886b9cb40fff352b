// One ioredis connection for the stores on the request path (rate-limit counters, response
// cache, semantic index; openRedisConnection makes the one they share), with the failure
// behaviour those stores need: every call answers or
// rejects within a short deadline with the store's "unavailable" error (code
// AIGW_ERR_STORE_UNAVAILABLE), which the caller turns into fail-open, fail-closed or a MISS.
// Nothing is queued while disconnected (enableOfflineQueue off), nothing is resent after a
// reconnect (a resent consume would count twice), in-flight calls are capped, and a socket
// that stops answering is destroyed and reconnected with backoff in the background.

import { Redis, type RedisOptions } from 'ioredis';

/** Lua scripts a store defines on the connection (ioredis `scripts` / defineCommand). */
export type RedisScripts = NonNullable<RedisOptions['scripts']>;

export interface FailFastRedisOptions {
  /**
   * The connection shared with the other stores on the same Redis (openRedisConnection);
   * its owner closes it, this store's close does not.
   */
  readonly connection?: RedisConnection | undefined;
  /** Or a redis:// or rediss:// URL the store connects to on its own (and closes on close). */
  readonly url?: string | undefined;
  /** Longest a call may take before it rejects as unavailable. */
  readonly commandTimeoutMs: number;
  /** Names the component in error messages, e.g. "response cache". */
  readonly component: string;
  /** Lua scripts to define on the connection; names must not clash with another store's. */
  readonly scripts: RedisScripts;
  /**
   * false: this store's scripts are written to the socket when called, not deferred to the
   * connection's auto-pipeline (which sends one batch at a time, so a call waits behind the
   * batch in flight); for a store that batches its own writes. Default true.
   */
  readonly autoPipeline?: boolean | undefined;
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

/** The longest of the stores' default call deadlines (counters 50 ms, cache and index 100 ms). */
const SHARED_COMMAND_TIMEOUT_MS = 100;

/**
 * The one Redis connection for `url`, shared by the counter store, the response cache and
 * the semantic index (each passes it as `connection`). The caller owns it: the stores'
 * close leaves it open, the caller closes it after them. `commandTimeoutMs` should be the
 * longest deadline of the stores using it; each store still enforces its own.
 */
export function openRedisConnection(url: string, options: { commandTimeoutMs?: number } = {}): RedisConnection {
  return new RedisConnection(url, options.commandTimeoutMs ?? SHARED_COMMAND_TIMEOUT_MS);
}

/** One ioredis client with the fail-fast connection policy, usable by several stores. */
export class RedisConnection {
  readonly client: Redis;
  /** The URL without its password, for messages. */
  readonly where: string;
  readonly #timeoutMs: number;
  #closed = false;
  #lastError: Error | undefined;
  #connecting: Promise<void> | undefined;

  constructor(url: string, commandTimeoutMs: number) {
    this.#timeoutMs = commandTimeoutMs;
    if (!(this.#timeoutMs > 0)) throw new RangeError(`commandTimeoutMs must be positive, got ${commandTimeoutMs}`);
    this.where = redactRedisUrl(url);
    this.client = new Redis(url, {
      commandTimeout: this.#timeoutMs,
      // Connecting may take longer than one command; calls do not wait for it (see ready).
      connectTimeout: Math.max(1_000, this.#timeoutMs * 4),
      socketTimeout: Math.max(1_000, this.#timeoutMs * 20),
      disconnectTimeout: 200,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (times) => Math.min(2_000, 25 * 2 ** Math.min(times, 7)) + Math.floor(Math.random() * 50),
      enableAutoPipelining: true,
    });
    // Without a listener ioredis prints every connection error; keep the latest as the cause.
    this.client.on('error', (error: Error) => {
      this.#lastError = error;
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Resolves when commands can be sent: waits for a connection being made (bounded by the
   * caller's deadline), fails at once while Redis is known to be down.
   */
  ready(): Promise<void> {
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

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.client.status === 'ready') {
      await withDeadline(this.client.quit(), this.#timeoutMs * 4).catch(() => undefined);
    }
    this.client.disconnect();
  }
}

/** A store's fail-fast view of a Redis connection; `S` names the methods `scripts` defines. */
export class FailFastRedis<S extends object> {
  readonly client: Redis & S;
  readonly #connection: RedisConnection;
  /** The connection is this store's own (made from `url`), so its close closes it. */
  readonly #ownsConnection: boolean;
  readonly #timeoutMs: number;
  readonly #component: string;
  readonly #unavailable: FailFastRedisOptions['unavailable'];
  #inFlight = 0;
  #closed = false;

  constructor(options: FailFastRedisOptions) {
    this.#timeoutMs = options.commandTimeoutMs;
    if (!(this.#timeoutMs > 0)) throw new RangeError(`commandTimeoutMs must be positive, got ${options.commandTimeoutMs}`);
    if ((options.connection === undefined) === (options.url === undefined)) {
      throw new TypeError(`${options.component}: give either a Redis connection or a url`);
    }
    this.#component = options.component;
    this.#unavailable = options.unavailable;
    this.#ownsConnection = options.connection === undefined;
    this.#connection = options.connection ?? new RedisConnection(options.url as string, this.#timeoutMs);
    for (const [name, definition] of Object.entries(options.scripts)) this.#connection.client.defineCommand(name, definition);
    if (options.autoPipeline === false) {
      const clientOptions = this.#connection.client.options;
      // A new array: ioredis's default one is shared by every client in the process.
      clientOptions.autoPipeliningIgnoredCommands = [...(clientOptions.autoPipeliningIgnoredCommands ?? []), ...Object.keys(options.scripts)];
    }
    // defineCommand adds the methods at run time; the cast only names them for TypeScript.
    this.client = this.#connection.client as Redis & S;
  }

  /** Runs `send` within the deadline; every failure becomes the store's "unavailable" error. */
  async call<T>(send: (client: Redis & S) => Promise<T>): Promise<T> {
    const where = this.#connection.where;
    if (this.#closed || this.#connection.closed) throw this.#unavailable(`${this.#component} at ${where} is closed`);
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      throw this.#unavailable(`${this.#component} at ${where} is not keeping up (${MAX_IN_FLIGHT} calls in flight)`);
    }
    this.#inFlight++;
    try {
      // Connected (the common case): send now, without a hop through ready().
      const sent = this.#connection.client.status === 'ready' ? send(this.client) : this.#connection.ready().then(() => send(this.client));
      return await withDeadline(sent, this.#timeoutMs);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw this.#unavailable(`${this.#component} at ${where} unavailable: ${reason}`, { cause });
    } finally {
      this.#inFlight--;
    }
  }

  /** Waits (bounded) for the connection, then runs `warmUp` (e.g. loads a script). */
  async connect(timeoutMs: number, warmUp: (client: Redis & S) => Promise<unknown>): Promise<void> {
    await withDeadline(this.#connection.ready(), timeoutMs);
    await withDeadline(warmUp(this.client), timeoutMs);
  }

  /** Stops this store's calls; closes the connection only when the store made it itself. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsConnection) await this.#connection.close();
  }
}

/** Rejects after `ms` unless `promise` settles first; the timer never keeps the process alive. */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  // One promise and one timer per call (this runs on every store call of the request path).
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
