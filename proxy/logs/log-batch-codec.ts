import type { AttemptRecord, RequestRecord } from '../observability/request-record.ts';

// A batch of records as the SQLite store hands it to its worker (issue 32): columns instead of
// objects. JSON.stringify of a batch cost the serving thread ~5.5 µs a record (and postMessage
// of the text ~2 more), a structured clone of the objects ~4; this costs about 1: numbers go in
// one Float64Array (transferred, not copied), strings as indexes into a per-batch table where
// each repeated value (route, provider, model, workspace, …) is cloned once. Only metadata,
// rare, is JSON text. The worker gets back what the JSON round trip gave it: absent fields
// undefined, a non-finite number null (optional ones undefined: stored NULL either way).

/** String fields, each a table index (-1 when absent). */
const UNIQUE_TEXT = ['id', 'traceId', 'otelTraceId'] as const;
const SHARED_TEXT = ['method', 'route', 'apiKeyId', 'workspace', 'configId', 'targetPath', 'provider', 'model', 'modelRequested', 'cacheStatus', 'guardrailVerdict', 'errorCode'] as const;
const REQUIRED_NUMBERS = ['startedAt', 'status', 'latencyMs', 'retries'] as const;
const OPTIONAL_NUMBERS = ['ttftMs', 'promptTokens', 'completionTokens', 'totalTokens', 'cachedTokens', 'reasoningTokens', 'costUsd'] as const;
const ATTEMPT_TEXT = ['target', 'provider', 'model', 'errorCode', 'skipped'] as const;

const TEXTS = UNIQUE_TEXT.length + SHARED_TEXT.length + 1; // + metadata
// Per record: the numbers, usageEstimated, the attempt count.
const NUMBERS = REQUIRED_NUMBERS.length + OPTIONAL_NUMBERS.length + 2;
const ATTEMPT_TEXTS = ATTEMPT_TEXT.length;

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
  for (const record of records) {
    for (const field of UNIQUE_TEXT) texts[t++] = unique(record[field]);
    for (const field of SHARED_TEXT) texts[t++] = intern(record[field]);
    texts[t++] = record.metadata === undefined ? -1 : unique(JSON.stringify(record.metadata));
    for (const field of REQUIRED_NUMBERS) numbers[n++] = record[field];
    for (const field of OPTIONAL_NUMBERS) numbers[n++] = record[field] ?? Number.NaN;
    numbers[n++] = record.usageEstimated === undefined ? Number.NaN : record.usageEstimated === true ? 1 : 0;
    const attempts = record.attempts;
    numbers[n++] = attempts === undefined ? -1 : attempts.length;
    if (attempts === undefined) continue;
    for (const attempt of attempts) {
      for (const field of ATTEMPT_TEXT) attemptTexts[at++] = intern(attempt[field]);
      attemptNumbers[an++] = attempt.status ?? Number.NaN;
      attemptNumbers[an++] = attempt.durationMs;
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
    const record: Record<string, unknown> = {};
    for (const field of UNIQUE_TEXT) record[field] = text(texts[t++]);
    for (const field of SHARED_TEXT) record[field] = text(texts[t++]);
    const metadata = text(texts[t++]);
    record['metadata'] = metadata === undefined ? undefined : JSON.parse(metadata);
    for (const field of REQUIRED_NUMBERS) record[field] = required(numbers[n++]);
    for (const field of OPTIONAL_NUMBERS) record[field] = optional(numbers[n++]);
    const estimated = numbers[n++];
    record['usageEstimated'] = estimated === 1 ? true : estimated === 0 ? false : undefined;
    const attemptsHere = numbers[n++] ?? -1;
    if (attemptsHere >= 0) {
      if (at + attemptsHere * ATTEMPT_TEXTS > attemptTexts.length) throw new RangeError('malformed request log batch');
      const attempts: AttemptRecord[] = new Array(attemptsHere);
      for (let a = 0; a < attemptsHere; a++) {
        const attempt: Record<string, unknown> = {};
        for (const field of ATTEMPT_TEXT) attempt[field] = text(attemptTexts[at++]);
        const status = attemptNumbers[an++];
        attempt['status'] = status !== undefined && Number.isFinite(status) ? status + 0 : null;
        attempt['durationMs'] = required(attemptNumbers[an++]);
        attempts[a] = attempt as unknown as AttemptRecord;
      }
      record['attempts'] = attempts;
    }
    records[i] = record as unknown as RequestRecord;
  }
  return records;
}
