import type { CircuitBreakerSettings } from '../config/routing-config-schema.ts';

// Circuit breakers per target (DESIGN.md §2). State lives outside the config snapshot, so a
// reload never resets it; it is keyed by a stable target id and bounded in size (least
// recently used ids are forgotten first). The clock is injected so tests drive time.
//
// closed --(failure_threshold consecutive failures)--> open
// open   --(cooldown_interval elapsed; one trial let through)--> half-open
// half-open --success--> closed ; --failure--> open

export type CircuitState = 'closed' | 'half-open' | 'open';

interface BreakerEntry {
  state: CircuitState;
  failures: number;
  openedAt: number;
  trialInFlight: boolean;
  /** Bounded metric label for this target. */
  label: string;
}

export interface BreakerTransition {
  readonly label: string;
  readonly from: CircuitState;
  readonly to: CircuitState;
}

export interface CircuitBreakersOptions {
  now?: () => number;
  /** Most target ids remembered (default 10,000). */
  maxEntries?: number;
  onTransition?: (transition: BreakerTransition) => void;
}

export const CIRCUIT_STATE_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, 'half-open': 1, open: 2 };

export class CircuitBreakers {
  readonly #entries = new Map<string, BreakerEntry>();
  readonly #now: () => number;
  readonly #maxEntries: number;
  readonly #onTransition: ((transition: BreakerTransition) => void) | undefined;

  constructor(options: CircuitBreakersOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#onTransition = options.onTransition;
  }

  /** Would a request be let through now? Does not claim the half-open trial. */
  isAvailable(id: string, settings: CircuitBreakerSettings): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined || entry.state === 'closed') return true;
    if (entry.state === 'half-open') return !entry.trialInFlight;
    return this.#now() - entry.openedAt >= settings.cooldown_interval;
  }

  /** Claims passage for one request: false while open (or while the half-open trial runs). */
  tryPass(id: string, label: string, settings: CircuitBreakerSettings): boolean {
    const entry = this.#touch(id, label);
    if (entry.state === 'closed') return true;
    if (entry.state === 'open') {
      if (this.#now() - entry.openedAt < settings.cooldown_interval) return false;
      this.#move(entry, 'half-open');
    }
    if (entry.trialInFlight) return false;
    entry.trialInFlight = true;
    return true;
  }

  /** Records the outcome of a request that was let through. */
  record(id: string, label: string, settings: CircuitBreakerSettings, failed: boolean): void {
    const entry = this.#touch(id, label);
    if (entry.state === 'half-open') {
      entry.trialInFlight = false;
      if (failed) this.#open(entry);
      else this.#close(entry);
      return;
    }
    if (entry.state === 'open') return;
    if (!failed) {
      entry.failures = 0;
      return;
    }
    entry.failures++;
    if (entry.failures >= settings.failure_threshold) this.#open(entry);
  }

  /** Gives back a claimed passage without an outcome (the client went away mid-trial). */
  release(id: string): void {
    const entry = this.#entries.get(id);
    if (entry !== undefined) entry.trialInFlight = false;
  }

  stateOf(id: string): CircuitState {
    return this.#entries.get(id)?.state ?? 'closed';
  }

  get size(): number {
    return this.#entries.size;
  }

  #touch(id: string, label: string): BreakerEntry {
    let entry = this.#entries.get(id);
    if (entry !== undefined) {
      // Re-insert to keep Map order = least recently used first.
      this.#entries.delete(id);
      this.#entries.set(id, entry);
      return entry;
    }
    entry = { state: 'closed', failures: 0, openedAt: 0, trialInFlight: false, label };
    this.#entries.set(id, entry);
    if (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    return entry;
  }

  #open(entry: BreakerEntry): void {
    entry.openedAt = this.#now();
    entry.failures = 0;
    this.#move(entry, 'open');
  }

  #close(entry: BreakerEntry): void {
    entry.failures = 0;
    this.#move(entry, 'closed');
  }

  #move(entry: BreakerEntry, to: CircuitState): void {
    const from = entry.state;
    if (from === to) return;
    entry.state = to;
    this.#onTransition?.({ label: entry.label, from, to });
  }
}

/** Is this answer a failure for the breaker? Default: status ≥ 500, network errors, timeouts. */
export function countsAsBreakerFailure(status: number, settings: CircuitBreakerSettings, networkOrTimeout: boolean): boolean {
  if (networkOrTimeout) return true;
  if (settings.failure_status_codes !== undefined) return settings.failure_status_codes.includes(status);
  return status >= 500;
}
