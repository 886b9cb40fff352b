// The worker's old way through records, kept as the reference the batch-to-values path
// (proxy/logs/log-batch-rows.ts) is held to: the records back from a batch, as
// JSON.parse(JSON.stringify(records)) would have them, for rowOf.
import type { AttemptRecord, RequestRecord } from '../../../proxy/observability/request-record.ts';
import { ATTEMPT_TEXTS, NUMBERS, TEXTS, type EncodedBatch } from '../../../proxy/logs/log-batch-codec.ts';

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
