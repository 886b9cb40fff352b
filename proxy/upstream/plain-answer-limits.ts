// How much of a plain (non-streamed) upstream answer the gateway holds in memory. An answer
// is read whole, inside the attempt (so a broken or invalid one can still be retried), only
// up to PREFIX_BYTES. A larger one is either relayed as it arrives (nothing needs to parse
// it) or read on — into one buffer, up to `maxParsedBytes` — when something must parse it
// (a translating adapter, output guardrails). Those large reads share one process-wide
// budget, so that many of them at once are refused (503, retry-after) instead of taking the
// process past its memory limit: a parsed answer costs about three times its size (bytes,
// the decoded string, the objects), and output guardrails that read its text copy it again: up to about five times.

/** An answer up to this size is read whole inside the attempt. */
export const PREFIX_BYTES = 1024 * 1024;
/** Default largest plain answer read whole to be parsed. */
export const DEFAULT_MAX_PARSED_ANSWER_BYTES = 16 * 1024 * 1024;
/** Largest plain answer relayed as it arrives (it costs no memory; the cap only ends a runaway answer). */
export const MAX_RELAYED_PLAIN_BYTES = 256 * 1024 * 1024;

export interface PlainAnswerLimits {
  /** Largest plain answer read whole to be parsed; past it, a 502 and the upstream is aborted. */
  readonly maxParsedBytes: number;
  /** Bytes all large parsed answers may hold at once (default: 3 × maxParsedBytes). */
  readonly budgetBytes: number;
}

let limits: PlainAnswerLimits = { maxParsedBytes: DEFAULT_MAX_PARSED_ANSWER_BYTES, budgetBytes: 3 * DEFAULT_MAX_PARSED_ANSWER_BYTES };
let held = 0;

export function plainAnswerLimits(): PlainAnswerLimits {
  return limits;
}

/** Sets the process's limits (at start-up, from --max-parsed-answer-bytes). */
export function setPlainAnswerLimits(maxParsedBytes: number = DEFAULT_MAX_PARSED_ANSWER_BYTES, budgetBytes: number = 3 * maxParsedBytes): void {
  limits = { maxParsedBytes, budgetBytes: Math.max(budgetBytes, maxParsedBytes) };
}

/** Bytes reserved by large parsed answers right now. */
export function heldPlainAnswerBytes(): number {
  return held;
}

/** Reserves `bytes` of the budget; the release (idempotent), or undefined when the budget is spent. */
export function reservePlainAnswerBytes(bytes: number): (() => void) | undefined {
  if (held + bytes > limits.budgetBytes) return undefined;
  held += bytes;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held -= bytes;
  };
}
