import type { RequestRecord } from '../observability/request-record.ts';

// A batch of records as the SQLite store hands it to its worker (issue 32): columns instead of
// objects. JSON.stringify of a batch cost the serving thread ~5.5 µs a record (and postMessage
// of the text ~2 more), a structured clone of the objects ~4; this costs ~0.4 (~1.5 with the
// post): numbers go in a Float64Array (transferred, not copied), strings as indexes into a
// per-batch table where each repeated value (route, provider, model, …) is cloned once. Only
// metadata, rare, is JSON text. The worker turns it straight into the insert's values
// (log-batch-rows.ts): what the JSON round trip gave, absent fields and non-finite numbers
// stored NULL.

// Per record, in this order (unrolled below: one object shape, no lookup by field name).
// texts: id, traceId, otelTraceId, method, route, apiKeyId, workspace, configId, targetPath,
//   provider, model, modelRequested, cacheStatus, guardrailVerdict, errorCode, metadata (JSON)
// numbers: startedAt, status, latencyMs, retries, ttftMs, promptTokens, completionTokens,
//   totalTokens, cachedTokens, reasoningTokens, costUsd, usageEstimated (1/0), attempt count
// per attempt: texts target, provider, model, errorCode, skipped; numbers status, durationMs
export const TEXTS = 16;
export const NUMBERS = 13;
export const ATTEMPT_TEXTS = 5;

export interface EncodedBatch {
  readonly count: number;
  readonly strings: string[];
  readonly texts: Int32Array;
  readonly numbers: Float64Array;
  /** Attempts of all records in order: their strings' indexes, then status and duration. */
  readonly attemptTexts: Int32Array;
  readonly attemptNumbers: Float64Array;
}

export function encodeBatch(records: readonly RequestRecord[]): EncodedBatch {
  const count = records.length;
  const strings: string[] = [];
  const shared = new Map<string, number>();
  const intern = (value: string | undefined): number => {
    if (value === undefined) return -1;
    let index = shared.get(value);
    if (index === undefined) {
      index = strings.push(value) - 1;
      shared.set(value, index);
    }
    return index;
  };
  const unique = (value: string | undefined): number => (value === undefined ? -1 : strings.push(value) - 1);
  let attemptCount = 0;
  for (const record of records) attemptCount += record.attempts?.length ?? 0;
  const texts = new Int32Array(count * TEXTS);
  const numbers = new Float64Array(count * NUMBERS);
  const attemptTexts = new Int32Array(attemptCount * ATTEMPT_TEXTS);
  const attemptNumbers = new Float64Array(attemptCount * 2);
  let t = 0;
  let n = 0;
  let at = 0;
  let an = 0;
  const absent = Number.NaN;
  for (const record of records) {
    texts[t] = unique(record.id);
    texts[t + 1] = unique(record.traceId);
    texts[t + 2] = unique(record.otelTraceId);
    texts[t + 3] = intern(record.method);
    texts[t + 4] = intern(record.route);
    texts[t + 5] = intern(record.apiKeyId);
    texts[t + 6] = intern(record.workspace);
    texts[t + 7] = intern(record.configId);
    texts[t + 8] = intern(record.targetPath);
    texts[t + 9] = intern(record.provider);
    texts[t + 10] = intern(record.model);
    texts[t + 11] = intern(record.modelRequested);
    texts[t + 12] = intern(record.cacheStatus);
    texts[t + 13] = intern(record.guardrailVerdict);
    texts[t + 14] = intern(record.errorCode);
    texts[t + 15] = record.metadata === undefined ? -1 : unique(JSON.stringify(record.metadata));
    t += TEXTS;
    numbers[n] = record.startedAt;
    numbers[n + 1] = record.status;
    numbers[n + 2] = record.latencyMs;
    numbers[n + 3] = record.retries;
    numbers[n + 4] = record.ttftMs ?? absent;
    numbers[n + 5] = record.promptTokens ?? absent;
    numbers[n + 6] = record.completionTokens ?? absent;
    numbers[n + 7] = record.totalTokens ?? absent;
    numbers[n + 8] = record.cachedTokens ?? absent;
    numbers[n + 9] = record.reasoningTokens ?? absent;
    numbers[n + 10] = record.costUsd ?? absent;
    numbers[n + 11] = record.usageEstimated === undefined ? absent : record.usageEstimated === true ? 1 : 0;
    const attempts = record.attempts;
    numbers[n + 12] = attempts === undefined ? -1 : attempts.length;
    n += NUMBERS;
    if (attempts === undefined) continue;
    for (const attempt of attempts) {
      attemptTexts[at] = intern(attempt.target);
      attemptTexts[at + 1] = intern(attempt.provider);
      attemptTexts[at + 2] = intern(attempt.model);
      attemptTexts[at + 3] = intern(attempt.errorCode);
      attemptTexts[at + 4] = intern(attempt.skipped);
      at += ATTEMPT_TEXTS;
      attemptNumbers[an] = attempt.status ?? absent;
      attemptNumbers[an + 1] = attempt.durationMs;
      an += 2;
    }
  }
  return { count, strings, texts, numbers, attemptTexts, attemptNumbers };
}

/** The buffers postMessage can move instead of copying. */
export function transferablesOf(batch: EncodedBatch): ArrayBuffer[] {
  return [batch.texts.buffer, batch.numbers.buffer, batch.attemptTexts.buffer, batch.attemptNumbers.buffer] as ArrayBuffer[];
}
