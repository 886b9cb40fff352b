import type { AttemptRecord, RequestRecord } from '../observability/request-record.ts';

// A batch of records as the SQLite store hands it to its worker (issue 32): columns instead of
// objects. JSON.stringify of a batch cost the serving thread ~5.5 µs a record (and postMessage
// of the text ~2 more), a structured clone of the objects ~4; this costs ~0.4 (~1.5 with the
// post): numbers go in a Float64Array (transferred, not copied), strings as indexes into a
// per-batch table where each repeated value (route, provider, model, …) is cloned once. Only
// metadata, rare, is JSON text. Decoding is ~0.3 against JSON.parse's ~2. The worker gets back
// what the JSON round trip gave it: absent fields undefined, a non-finite number null
// (optional ones undefined: stored NULL either way).

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

// As JSON gave them: -0 became 0, a non-finite number null.
const required = (value: number | undefined): number => (value !== undefined && Number.isFinite(value) ? value + 0 : (null as unknown as number));
const optional = (value: number | undefined): number | undefined => (value !== undefined && Number.isFinite(value) ? value + 0 : undefined);

/** The records back (as JSON.parse(JSON.stringify(records)) would have them, for rowOf). */
export function decodeBatch(batch: EncodedBatch): RequestRecord[] {
  const { count, strings, texts, numbers, attemptTexts, attemptNumbers } = batch;
  if (texts.length !== count * TEXTS || numbers.length !== count * NUMBERS || attemptTexts.length * 2 !== attemptNumbers.length * ATTEMPT_TEXTS) {
    throw new RangeError('malformed request log batch');
  }
  const text = (index: number | undefined): string | undefined => (index === undefined || index < 0 ? undefined : strings[index]);
  const records: RequestRecord[] = new Array(count);
  let t = 0;
  let n = 0;
  let at = 0;
  let an = 0;
  for (let i = 0; i < count; i++) {
    const tries = numbers[n + 12] ?? -1;
    let attempts: AttemptRecord[] | undefined;
    if (tries >= 0) {
      if (at + tries * ATTEMPT_TEXTS > attemptTexts.length) throw new RangeError('malformed request log batch');
      attempts = new Array<AttemptRecord>(tries);
      for (let a = 0; a < tries; a++) {
        const status = attemptNumbers[an];
        attempts[a] = {
          target: text(attemptTexts[at]) as string,
          provider: text(attemptTexts[at + 1]),
          model: text(attemptTexts[at + 2]),
          errorCode: text(attemptTexts[at + 3]),
          skipped: text(attemptTexts[at + 4]) as AttemptRecord['skipped'],
          status: status !== undefined && Number.isFinite(status) ? status + 0 : null,
          durationMs: required(attemptNumbers[an + 1]),
        };
        at += ATTEMPT_TEXTS;
        an += 2;
      }
    }
    const metadata = text(texts[t + 15]);
    const estimated = numbers[n + 11];
    records[i] = {
      id: text(texts[t]) as string,
      traceId: text(texts[t + 1]) as string,
      otelTraceId: text(texts[t + 2]),
      method: text(texts[t + 3]) as string,
      route: text(texts[t + 4]) as string,
      apiKeyId: text(texts[t + 5]),
      workspace: text(texts[t + 6]),
      configId: text(texts[t + 7]),
      targetPath: text(texts[t + 8]),
      provider: text(texts[t + 9]),
      model: text(texts[t + 10]),
      modelRequested: text(texts[t + 11]),
      cacheStatus: text(texts[t + 12]),
      guardrailVerdict: text(texts[t + 13]),
      errorCode: text(texts[t + 14]),
      metadata: metadata === undefined ? undefined : (JSON.parse(metadata) as Record<string, unknown>),
      startedAt: required(numbers[n]),
      status: required(numbers[n + 1]),
      latencyMs: required(numbers[n + 2]),
      retries: required(numbers[n + 3]),
      ttftMs: optional(numbers[n + 4]),
      promptTokens: optional(numbers[n + 5]),
      completionTokens: optional(numbers[n + 6]),
      totalTokens: optional(numbers[n + 7]),
      cachedTokens: optional(numbers[n + 8]),
      reasoningTokens: optional(numbers[n + 9]),
      costUsd: optional(numbers[n + 10]),
      usageEstimated: estimated === 1 ? true : estimated === 0 ? false : undefined,
      attempts,
    };
    t += TEXTS;
    n += NUMBERS;
  }
  return records;
}
