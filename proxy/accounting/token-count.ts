// Token counts are read from upstream answers, and an upstream may be a client's own host
// (x-gateway-custom-host): every count is hostile input. One check decides what a count is
// before it reaches usage, cost, metrics, token limits or the log: a finite, non-negative
// integer no larger than MAX_TOKEN_COUNT. Anything else is treated as absent (never as a
// huge or negative number: `1e999` parses to Infinity, which prom-client refuses by
// throwing, and a negative count would lower a key's totals).
//
// Refusals are tallied process-wide (a bounded `reason`), for the metric
// aigateway_upstream_usage_rejected_total: a reader deep in a translator has no metrics
// registry at hand, and the tally costs one increment on the rare bad value only.

/**
 * The largest count accepted for one usage field: a billion tokens, far above any model's
 * context or output (≈ 10⁶–10⁷) yet small enough that sums of a handful of fields and their
 * cost at any real price stay exact and finite.
 */
export const MAX_TOKEN_COUNT = 1_000_000_000;

export const TOKEN_COUNT_REJECTIONS = ['not_number', 'not_finite', 'negative', 'fraction', 'too_large'] as const;
export type TokenCountRejection = (typeof TOKEN_COUNT_REJECTIONS)[number];

const tally: Record<TokenCountRejection, number> = { not_number: 0, not_finite: 0, negative: 0, fraction: 0, too_large: 0 };

/**
 * A token count read from an upstream answer, or undefined when the value is absent or not a
 * sane count (counted by reason; `null` and `undefined` are absent, not refused).
 * @example tokenCount(12) === 12; tokenCount(1e999) === undefined; tokenCount(-0) === 0
 */
export function tokenCount(value: unknown): number | undefined {
  if (typeof value === 'number' && value >= 0 && value <= MAX_TOKEN_COUNT && Number.isInteger(value)) return value + 0; // -0 → 0
  if (value !== undefined && value !== null) tally[rejectionOf(value)]++;
  return undefined;
}

/** `tokenCount(value)`, or `fallback` when the value is absent or refused. */
export function tokenCountOr(value: unknown, fallback: number): number {
  return tokenCount(value) ?? fallback;
}

function rejectionOf(value: unknown): TokenCountRejection {
  if (typeof value !== 'number') return 'not_number';
  if (!Number.isFinite(value)) return 'not_finite';
  if (value < 0) return 'negative';
  if (!Number.isInteger(value)) return 'fraction';
  return 'too_large';
}

/** Refused values so far in this process, by reason. */
export function tokenCountRejections(): Readonly<Record<TokenCountRejection, number>> {
  return tally;
}

/** Token usage as the request record keeps it (the OpenAI convention: cached ⊂ prompt, reasoning ⊂ completion). */
export interface UsageCounts {
  readonly prompt: number | undefined;
  readonly completion: number | undefined;
  readonly total: number | undefined;
  readonly cachedPrompt?: number | undefined;
  readonly cacheWrite?: number | undefined;
  readonly reasoning?: number | undefined;
  /** Audio parts (⊂ prompt, ⊂ cachedPrompt, ⊂ completion), priced at the model's audio rates. */
  readonly audioPrompt?: number | undefined;
  readonly cachedAudioPrompt?: number | undefined;
  readonly audioCompletion?: number | undefined;
}

/**
 * Usage with every field checked: the one gate before the record, cost, metrics and limits.
 * Readers have checked each upstream field already; derived fields (Anthropic's prompt is
 * input + cache writes + cache reads) may reach a few MAX_TOKEN_COUNT. Returns the same
 * object when it is sane (the common case: no allocation); a refused total is recomputed.
 */
export function saneUsage(usage: UsageCounts): UsageCounts {
  const { prompt, completion, total, cachedPrompt, cacheWrite, reasoning, audioPrompt, cachedAudioPrompt, audioCompletion } = usage;
  const audioSane = isCount(audioPrompt) && isCount(cachedAudioPrompt) && isCount(audioCompletion);
  if (audioSane && isCount(prompt) && isCount(completion) && isCount(total) && isCount(cachedPrompt) && isCount(cacheWrite) && isCount(reasoning)) return usage;
  const checkedPrompt = derivedCount(prompt);
  const checkedCompletion = derivedCount(completion);
  const sum = checkedPrompt === undefined && checkedCompletion === undefined ? undefined : (checkedPrompt ?? 0) + (checkedCompletion ?? 0);
  return {
    prompt: checkedPrompt,
    completion: checkedCompletion,
    total: derivedCount(total) ?? sum,
    cachedPrompt: derivedCount(cachedPrompt),
    cacheWrite: derivedCount(cacheWrite),
    reasoning: derivedCount(reasoning),
    ...(audioPrompt === undefined && cachedAudioPrompt === undefined && audioCompletion === undefined
      ? {}
      : { audioPrompt: derivedCount(audioPrompt), cachedAudioPrompt: derivedCount(cachedAudioPrompt), audioCompletion: derivedCount(audioCompletion) }),
  };
}

const MAX_DERIVED_COUNT = 8 * MAX_TOKEN_COUNT;

function isCount(value: number | undefined): boolean {
  return value === undefined || (value >= 0 && value <= MAX_DERIVED_COUNT && Number.isInteger(value));
}

function derivedCount(value: number | undefined): number | undefined {
  if (isCount(value)) return value;
  tally[rejectionOf(value)]++;
  return undefined;
}

/** A cost in USD fit to record: finite and non-negative, else undefined (unpriced). */
export function saneCost(cost: number | undefined): number | undefined {
  return cost !== undefined && cost >= 0 && cost < Number.POSITIVE_INFINITY ? cost + 0 : undefined;
}
