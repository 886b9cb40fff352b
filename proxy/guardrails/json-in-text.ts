// Finds the JSON a model (or a caller) wrote inside a text: the whole text when it is
// JSON, else the fenced ```json blocks, else the balanced {…} / […] spans. Linear in the
// text length; at most MAX_CANDIDATES values are parsed.

const MAX_CANDIDATES = 32;

const FENCE = /```[ \t]*(json[\w-]*)?[ \t]*\r?\n([\s\S]*?)```/gi;

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** Top-level balanced `{…}` and `[…]` spans, skipping brackets inside JSON strings. */
function balancedSpans(text: string): string[] {
  const spans: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let index = 0; index < text.length && spans.length < MAX_CANDIDATES; index += 1) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"' && depth > 0) inString = true;
    else if (char === '{' || char === '[') {
      if (depth === 0) start = index;
      depth += 1;
    } else if ((char === '}' || char === ']') && depth > 0) {
      depth -= 1;
      if (depth === 0) spans.push(text.slice(start, index + 1));
    }
  }
  return spans;
}

/**
 * The JSON values found in `text`, best candidates first.
 *
 * @example
 * findJsonValues('Here you go: {"a": 1} and [2]') // → [{ a: 1 }, [2]]
 */
export function findJsonValues(text: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  const whole = tryParse(trimmed);
  if (whole.ok && typeof whole.value === 'object' && whole.value !== null) return [whole.value];

  const values: unknown[] = [];
  for (const match of trimmed.matchAll(FENCE)) {
    if (values.length >= MAX_CANDIDATES) break;
    const parsed = tryParse(match[2] ?? '');
    if (parsed.ok) values.push(parsed.value);
  }
  if (values.length > 0) return values;

  for (const span of balancedSpans(trimmed)) {
    const parsed = tryParse(span);
    if (parsed.ok) values.push(parsed.value);
  }
  return values;
}

/** The JSON objects (not arrays or scalars) found in `text`. */
export function findJsonObjects(text: string): Array<Record<string, unknown>> {
  return findJsonValues(text).filter(
    (value): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value),
  );
}
