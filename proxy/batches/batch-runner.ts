import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { BatchStore, ClaimedLine, LineOutcome } from './batch-store.ts';

// The worker loop of gateway-managed batches, one per gateway process: fail the lines of
// dead workers, validate new batches, keep up to `concurrency` lines in flight, finalize
// finished batches. Every step is a store operation that is safe with other replicas doing
// the same, so any number of processes can share one PostgreSQL. The heartbeat has its own
// timer: a long pass (validating or finalizing a large batch, a slow store) must not let
// the lease of a live worker lapse, or another replica fails its in-flight lines.

/** What running one line produced; `not-run` hands the line back (it never left the gateway). */
export type LineExecution = LineOutcome | { readonly notRun: true };

export interface BatchRunnerOptions {
  readonly store: BatchStore;
  readonly execute: (line: ClaimedLine) => Promise<LineExecution>;
  readonly logger: Logger;
  /** Lines in flight per process; default 8. */
  readonly concurrency?: number;
  /**
   * Polling interval (ms) while there is work; default 250. A pass that finds none doubles the
   * next wait, up to 8×; new batches (on this replica) and finished lines wake the loop at once.
   */
  readonly pollIntervalMs?: number;
  /** A worker silent for this long is dead and its in-flight lines fail (ms); default 10 000. */
  readonly leaseMs?: number;
  /** Standalone: no other process shares the store, so every other worker is gone. */
  readonly exclusive?: boolean;
  readonly now?: () => number;
}

/** Empty passes in a row after which the wait stops growing: pollIntervalMs × 8. */
const IDLE_BACKOFF_STEPS = 3;

/** Tries at recording a line's outcome before giving up on it (about 3 s in all). */
const OUTCOME_ATTEMPTS = 7;

export class BatchRunner {
  readonly workerId = `worker-${randomBytes(8).toString('hex')}`;
  readonly #options: Required<Omit<BatchRunnerOptions, 'exclusive'>> & { exclusive: boolean };
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = true;
  /** False once the server closes: inject refuses new requests, so no line is claimed to fail. */
  #claiming = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  /** A wake that came while a pass was running: the next sleep is skipped. */
  #woken = false;
  /** Empty passes in a row (capped): the next wait is pollIntervalMs × 2^this. */
  #idlePasses = 0;
  #lastSweep = Number.NEGATIVE_INFINITY;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  /** A heartbeat write in progress: the timer never stacks them up behind a slow store. */
  #beating: Promise<void> | undefined;

  constructor(options: BatchRunnerOptions) {
    // Each default applied per field: an option given as undefined keeps its default.
    this.#options = {
      store: options.store,
      execute: options.execute,
      logger: options.logger,
      concurrency: options.concurrency ?? 8,
      pollIntervalMs: options.pollIntervalMs ?? 250,
      leaseMs: options.leaseMs ?? 10_000,
      now: options.now ?? Date.now,
      exclusive: options.exclusive ?? false,
    };
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#claiming = true;
    const { store, now } = this.#options;
    await store.heartbeat(this.workerId, now());
    this.#heartbeatTimer = setInterval(() => this.#beat(), this.#options.leaseMs / 4);
    this.#heartbeatTimer.unref();
    if (this.#options.exclusive) await store.forgetOtherWorkers(this.workerId);
    this.#loop = this.#run();
  }

  #beat(): void {
    if (this.#beating !== undefined) return;
    const { store, now, logger } = this.#options;
    this.#beating = store
      .heartbeat(this.workerId, now())
      .catch((error: unknown) => logger.warn({ err: { message: (error as Error).message } }, 'batch worker heartbeat failed; retrying'))
      .finally(() => {
        this.#beating = undefined;
      });
  }

  /** Run a pass now (a batch was created or cancelled). */
  wake(): void {
    this.#idlePasses = 0;
    if (this.#wake === undefined) this.#woken = true;
    else this.#wake();
  }

  /** Stops claiming lines at once; those in flight still run (the server begins to close). */
  halt(): void {
    this.#claiming = false;
  }

  /** Stops claiming lines and waits for those in flight to be recorded. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.wake();
    await this.#loop;
    // Lines still in flight keep the lease until their outcomes are recorded.
    await Promise.allSettled([...this.#inFlight]);
    clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
    await this.#beating;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#pass();
      } catch (error) {
        this.#options.logger.warn({ err: { message: (error as Error).message } }, 'batch worker pass failed; retrying');
      }
      if (this.#stopped) break;
      if (this.#woken) {
        this.#woken = false;
        continue;
      }
      // An idle gateway polls less: each empty pass is synchronous store work on the serving
      // thread (at 4 a second, ≈ 1 ms of its CPU a second with no traffic at all).
      this.#idlePasses = this.#inFlight.size > 0 ? 0 : Math.min(this.#idlePasses + 1, IDLE_BACKOFF_STEPS);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.#options.pollIntervalMs * 2 ** this.#idlePasses);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.#wake = done;
      });
      this.#wake = undefined;
    }
  }

  async #pass(): Promise<void> {
    const { store, now, leaseMs, logger } = this.#options;
    if (now() - this.#lastSweep >= leaseMs / 4) {
      const failed = await store.failOrphanedLines(now() - leaseMs, 500);
      if (failed > 0) logger.warn({ lines: failed }, 'batch lines of a stopped worker marked failed (interrupted; not re-sent)');
      this.#lastSweep = now();
    }
    while (!this.#stopped && (await store.validateNext(now())) !== undefined) {
      // validate every waiting batch before claiming
    }
    await this.#fill();
    await store.finalizeReady(now(), 10);
  }

  async #fill(): Promise<void> {
    const { store, now, concurrency } = this.#options;
    if (this.#stopped || !this.#claiming) return;
    const lines = await store.claimLines(this.workerId, now(), concurrency - this.#inFlight.size);
    for (const line of lines) {
      const running = this.#runLine(line).finally(() => {
        this.#inFlight.delete(running);
        this.wake();
      });
      this.#inFlight.add(running);
    }
  }

  async #runLine(line: ClaimedLine): Promise<void> {
    const { store, execute, logger } = this.#options;
    let execution: LineExecution;
    try {
      execution = await execute(line);
    } catch (error) {
      logger.error({ batch_id: line.batchId, line: line.lineNo, err: { message: (error as Error).message } }, 'batch line crashed');
      execution = { notRun: true };
    }
    // A transient store error (a deadlock victim, a connection that dropped) must not leave the
    // claim `running` under a live worker, which would hold the batch open for ever: the write
    // is conditional on this worker's claim, so trying it again is safe.
    for (let attempt = 0; ; attempt++) {
      try {
        if ('notRun' in execution) await store.releaseLine(this.workerId, line);
        else await store.finishLine(this.workerId, line, execution);
        return;
      } catch (error) {
        if (attempt >= OUTCOME_ATTEMPTS - 1 || this.#stopped) {
          // The claim stays `running`; when this worker stops, the line fails as interrupted.
          logger.error({ batch_id: line.batchId, line: line.lineNo, err: { message: (error as Error).message } }, 'batch line outcome not recorded');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
  }
}
