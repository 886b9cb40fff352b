// A per-key work queue, like client-go's: a key is queued at most once however often it is
// added, is processed by one worker at a time, and a failed key comes back after an
// exponential backoff (reset by its next success). Adding a key while it is processed
// makes it run once more afterwards, so no change is lost.

export interface WorkQueueOptions {
  readonly process: (key: string) => Promise<void>;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Called whenever the number of waiting keys changes (for a gauge). */
  readonly onDepth?: (depth: number) => void;
  readonly onError?: (key: string, error: unknown, retryInMs: number) => void;
}

export class WorkQueue {
  readonly #options: WorkQueueOptions;
  readonly #queued = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #processing: string | undefined;
  #dirty = new Set<string>();
  #running = false;
  #stopped = false;
  #idle: Promise<void> = Promise.resolve();

  constructor(options: WorkQueueOptions) {
    this.#options = options;
  }

  get depth(): number {
    return this.#queued.size;
  }

  add(key: string): void {
    if (this.#stopped) return;
    if (this.#processing === key) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#options.onDepth?.(this.#queued.size);
    this.#kick();
  }

  addAfter(key: string, delayMs: number): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#timers.add(timer);
  }

  /** Stops taking work; resolves when the key in progress (if any) is done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#queued.clear();
    await this.#idle;
  }

  #kick(): void {
    if (this.#running || this.#stopped) return;
    this.#running = true;
    this.#idle = this.#drain().finally(() => {
      this.#running = false;
    });
  }

  async #drain(): Promise<void> {
    for (let key = this.#next(); key !== undefined && !this.#stopped; key = this.#next()) {
      this.#processing = key;
      try {
        await this.#options.process(key);
        this.#failures.delete(key);
      } catch (error) {
        const failures = (this.#failures.get(key) ?? 0) + 1;
        this.#failures.set(key, failures);
        const delay = Math.min(this.#options.maxDelayMs ?? 60_000, (this.#options.baseDelayMs ?? 200) * 2 ** (failures - 1));
        this.#options.onError?.(key, error, delay);
        this.addAfter(key, delay);
      } finally {
        this.#processing = undefined;
        if (this.#dirty.delete(key)) this.add(key);
      }
    }
  }

  #next(): string | undefined {
    const first = this.#queued.values().next();
    if (first.done === true) return undefined;
    this.#queued.delete(first.value);
    this.#options.onDepth?.(this.#queued.size);
    return first.value;
  }
}
