// A pass that runs again after a delay it chooses: never two passes at once, a timer that
// never holds the process open, and nothing scheduled once stopped. The operator's trackers
// (the Programmed tracker, budget spend) poll this way.
export class PollingLoop {
  readonly #pass: () => Promise<void>;
  readonly #nextDelayMs: () => number;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #stopped: boolean;

  /** `pass` handles its own errors (a throw is ignored); `nextDelayMs` is asked after each pass. */
  constructor(pass: () => Promise<void>, nextDelayMs: () => number, options: { stopped: boolean }) {
    this.#pass = pass;
    this.#nextDelayMs = nextDelayMs;
    this.#stopped = options.stopped;
  }

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    this.#stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The next pass in `delayMs` (replacing a pass already scheduled). */
  schedule(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#tick(), delayMs);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    if (this.#running) return;
    this.#running = true;
    try {
      await this.#pass();
    } catch {
      // the next pass retries
    } finally {
      this.#running = false;
      this.schedule(this.#nextDelayMs());
    }
  }
}
