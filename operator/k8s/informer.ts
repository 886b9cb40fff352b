import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { isKubeApiError, KubeApiError, type KubeClient, type WatchEvent } from './kube-client.ts';

// An informer: list a collection, then watch it from the list's resourceVersion, keeping a
// cache by name. Any error restarts it (after a capped backoff) with a fresh list; a 410
// Gone (the resourceVersion is too old) relists at once; a periodic relist with jitter
// heals anything a watch might have missed. `onChange` fires after every cache change.

export interface KubeObject {
  readonly metadata: { readonly name: string; readonly resourceVersion?: string | undefined };
}

interface ListResponse<T> {
  readonly metadata: { readonly resourceVersion?: string; readonly continue?: string };
  readonly items: T[];
}

export interface InformerOptions<T extends KubeObject> {
  readonly client: KubeClient;
  /** Collection path, e.g. /api/v1/namespaces/aigw/secrets */
  readonly path: string;
  /** A name for logs and metrics. */
  readonly name: string;
  readonly logger: Logger;
  readonly fieldSelector?: string;
  readonly labelSelector?: string;
  /** Mean time between full relists (ms); each interval is stretched by up to 20 % jitter. */
  readonly relistIntervalMs?: number;
  /** Server-side watch timeout (s): the server ends the stream, and the watch resumes. */
  readonly watchTimeoutSeconds?: number;
  /** Drops what the cache need not keep (e.g. managedFields). */
  readonly transform?: (object: T) => T;
  readonly onChange: () => void;
  readonly onRelist?: (reason: string) => void;
  readonly random?: () => number;
  /**
   * A collection that may not exist yet (the CRD of a kind added in a later release, before
   * its CRD is applied): a 404 counts as an empty, synced list, retried with backoff, so the
   * other kinds still render.
   */
  readonly absentIsEmpty?: boolean;
}

const MAX_BACKOFF_MS = 30_000;

export class Informer<T extends KubeObject> {
  readonly #options: InformerOptions<T>;
  readonly #cache = new Map<string, T>();
  #synced = false;
  #stopped = false;
  #controller = new AbortController();
  #relistTimer: NodeJS.Timeout | undefined;
  #loop: Promise<void> | undefined;
  #lastError: string | undefined;

  constructor(options: InformerOptions<T>) {
    this.#options = options;
  }

  /** True once the first list has filled the cache. */
  get synced(): boolean {
    return this.#synced;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  list(): T[] {
    return [...this.#cache.values()];
  }

  get(name: string): T | undefined {
    return this.#cache.get(name);
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#relistTimer);
    this.#controller.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#stopped) {
      this.#controller = new AbortController();
      this.#scheduleRelist();
      try {
        const resourceVersion = await this.#list();
        failures = 0;
        this.#lastError = undefined;
        await this.#watch(resourceVersion);
      } catch (error) {
        if (this.#stopped) break;
        if (this.#controller.signal.aborted) continue; // periodic relist
        if (isKubeApiError(error, 410)) {
          this.#options.onRelist?.('gone');
          continue;
        }
        failures += 1;
        this.#lastError = (error as Error).message;
        if (this.#options.absentIsEmpty === true && isKubeApiError(error, 404)) this.#markAbsent();
        const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(failures, 7)) * (0.5 + this.#random() / 2);
        this.#options.logger.warn({ informer: this.#options.name, err: { message: this.#lastError }, retry_ms: Math.round(delay) }, 'informer failed; restarting');
        this.#options.onRelist?.('error');
        await sleep(delay, undefined, { signal: this.#controller.signal }).catch(() => undefined);
      } finally {
        clearTimeout(this.#relistTimer);
      }
    }
  }

  #markAbsent(): void {
    const changed = !this.#synced || this.#cache.size > 0;
    this.#cache.clear();
    this.#synced = true;
    if (changed) this.#options.onChange();
  }

  #random(): number {
    return (this.#options.random ?? Math.random)();
  }

  #scheduleRelist(): void {
    const interval = this.#options.relistIntervalMs ?? 300_000;
    const controller = this.#controller;
    this.#relistTimer = setTimeout(() => {
      this.#options.onRelist?.('periodic');
      controller.abort();
    }, interval * (1 + 0.2 * this.#random()));
    this.#relistTimer.unref();
  }

  async #list(): Promise<string | undefined> {
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await this.#options.client.request<ListResponse<T>>('GET', this.#options.path, {
        query: {
          limit: 500,
          continue: continueToken,
          fieldSelector: this.#options.fieldSelector,
          labelSelector: this.#options.labelSelector,
        },
        signal: this.#controller.signal,
      });
      for (const item of page.items) fresh.set(item.metadata.name, this.#transform(item));
      continueToken = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (continueToken !== undefined);
    this.#cache.clear();
    for (const [name, item] of fresh) this.#cache.set(name, item);
    this.#synced = true;
    this.#options.onChange();
    return resourceVersion;
  }

  async #watch(fromVersion: string | undefined): Promise<void> {
    let resourceVersion = fromVersion;
    while (!this.#stopped && !this.#controller.signal.aborted) {
      const events = this.#options.client.watch<T>(
        this.#options.path,
        {
          resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: this.#options.watchTimeoutSeconds ?? 300,
          fieldSelector: this.#options.fieldSelector,
          labelSelector: this.#options.labelSelector,
        },
        this.#controller.signal,
      );
      for await (const event of events) resourceVersion = this.#apply(event) ?? resourceVersion;
    }
  }

  /** Applies one event; returns the resourceVersion to resume from. */
  #apply(event: WatchEvent<T>): string | undefined {
    if (event.type === 'ERROR') {
      const status = event.object as unknown as { code?: number; message?: string; reason?: string };
      if (status.code === 410) throw new KubeApiError(410, 'Expired', status.message ?? 'resourceVersion too old');
      throw new Error(`watch error: ${status.reason ?? ''} ${status.message ?? ''}`.trim());
    }
    const resourceVersion = event.object.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return resourceVersion;
    if (event.type === 'DELETED') this.#cache.delete(event.object.metadata.name);
    else this.#cache.set(event.object.metadata.name, this.#transform(event.object));
    this.#options.onChange();
    return resourceVersion;
  }

  #transform(object: T): T {
    return this.#options.transform === undefined ? object : this.#options.transform(object);
  }
}
