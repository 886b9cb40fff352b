import { ATTEMPT_TEXTS, NUMBERS, TEXTS, type EncodedBatch } from './log-batch-codec.ts';
import { cleanText, metadataColumns } from './log-sql.ts';

// The SQLite worker's way from a batch (log-batch-codec.ts) to the insert's values (issue 32):
// straight from the columns, without records in between. Each value of the batch's string
// table is cleaned (and JSON-quoted, for attempts) once however many records share it, and
// an attempt's JSON is put together from those pieces. The values are exactly
// valuesOf(rowOf(record)) of the batch's records decoded (a test holds them to a reference decoder); the way through
// records cost the worker ~1.5 µs a record, this ~0.5.

const malformed = (): RangeError => new RangeError('malformed request log batch');

// As the JSON round trip and rowOf take them: a non-finite number null (-0 as 0).
const finite = (value: number | undefined): number | null => (value !== undefined && Number.isFinite(value) ? value + 0 : null);
const rounded = (value: number | undefined): number | null => (value !== undefined && Number.isFinite(value) ? Math.round(value + 0) : null);

// JSON.stringify of a number: a finite one as String gives it, any other null.
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null');

/** Each record's values in LOG_COLUMNS order, as valuesOf(rowOf(record)) gives them. */
export function valuesOfBatch(batch: EncodedBatch): unknown[][] {
  const { count, strings, texts, numbers, attemptTexts, attemptNumbers } = batch;
  if (texts.length !== count * TEXTS || numbers.length !== count * NUMBERS || attemptTexts.length * 2 !== attemptNumbers.length * ATTEMPT_TEXTS) {
    throw malformed();
  }
  const cleaned: Array<string | null | undefined> = new Array(strings.length);
  const quoted: Array<string | undefined> = new Array(strings.length);
  /** The string at `index` cleaned, or null for none. */
  const text = (index: number | undefined): string | null => {
    if (index === undefined || index < 0) return null;
    let value = cleaned[index];
    if (value === undefined) {
      const raw = strings[index];
      value = raw === undefined ? null : cleanText(raw);
      cleaned[index] = value;
    }
    return value;
  };
  // rowOf refused a record without them (cleanText of undefined threw): the batch fails.
  const required = (index: number | undefined): string => {
    const value = text(index);
    if (value === null) throw new TypeError('request log record without id, trace id, method or route');
    return value;
  };
  /** JSON of the cleaned string at `index` (`null` for none). */
  const json = (index: number | undefined): string => {
    if (index === undefined || index < 0) return 'null';
    let value = quoted[index];
    if (value === undefined) {
      value = JSON.stringify(text(index));
      quoted[index] = value;
    }
    return value;
  };
  const rows: unknown[][] = new Array(count);
  let t = 0;
  let n = 0;
  let at = 0;
  let an = 0;
  for (let i = 0; i < count; i++) {
    const tries = numbers[n + 12] ?? -1;
    let attempts: string | null = null;
    if (tries >= 0) {
      if (at + tries * ATTEMPT_TEXTS > attemptTexts.length) throw malformed();
      // storedAttempt's JSON: target, provider, model, status, duration_ms, error_code[, skipped].
      for (let a = 0; a < tries; a++) {
        if (json(attemptTexts[at]) === 'null') throw new TypeError('request log attempt without target');
        const status = rounded(attemptNumbers[an]);
        const duration = finite(attemptNumbers[an + 1]);
        const skipped = attemptTexts[at + 4] ?? -1;
        const item =
          `{"target":${json(attemptTexts[at])},"provider":${json(attemptTexts[at + 1])},"model":${json(attemptTexts[at + 2])},` +
          `"status":${status === null ? 'null' : String(status)},"duration_ms":${duration === null ? '0' : jsonNumber(Math.round(duration * 1000) / 1000)},` +
          `"error_code":${json(attemptTexts[at + 3])}${skipped < 0 || strings[skipped] === undefined ? '' : `,"skipped":${JSON.stringify(strings[skipped])}`}}`;
        attempts = attempts === null ? `[${item}` : `${attempts},${item}`;
        at += ATTEMPT_TEXTS;
        an += 2;
      }
      if (attempts !== null) attempts += ']';
    }
    const metadataIndex = texts[t + 15] ?? -1;
    let metadata: string | null = null;
    let metadataFlat: string | null = null;
    const metadataText = metadataIndex < 0 ? undefined : strings[metadataIndex];
    if (metadataText !== undefined) {
      [metadata, metadataFlat] = metadataColumns(JSON.parse(metadataText) as Record<string, unknown>, metadataText);
    }
    const status = finite(numbers[n + 1]);
    const retries = finite(numbers[n + 3]);
    rows[i] = [
      required(texts[t]),
      required(texts[t + 1]),
      finite(numbers[n]),
      required(texts[t + 3]),
      required(texts[t + 4]),
      Math.round(status as number),
      finite(numbers[n + 2]),
      finite(numbers[n + 4]),
      text(texts[t + 5]),
      text(texts[t + 6]),
      text(texts[t + 7]),
      text(texts[t + 8]),
      text(texts[t + 9]),
      text(texts[t + 10]),
      metadata,
      metadataFlat,
      rounded(numbers[n + 5]),
      rounded(numbers[n + 6]),
      rounded(numbers[n + 7]),
      text(texts[t + 12]),
      Math.round(retries as number),
      text(texts[t + 13]),
      text(texts[t + 14]),
      rounded(numbers[n + 8]),
      rounded(numbers[n + 9]),
      numbers[n + 11] === 1 ? 1 : null,
      finite(numbers[n + 10]),
      text(texts[t + 2]),
      text(texts[t + 11]),
      attempts,
    ];
    t += TEXTS;
    n += NUMBERS;
  }
  return rows;
}
