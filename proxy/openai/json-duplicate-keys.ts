import { formatIssuePath } from './zod-issues.ts';

// JSON.parse keeps the last of two equal keys; the gateway validates that object but
// forwards the client's bytes, and a provider's parser may keep the first. `{"model":"ok",
// "model":"other"}` would then be checked as one request and run as another. A body with a
// key twice in one object is therefore refused.
//
// One linear pass over bytes JSON.parse has already accepted (so only strings, brackets,
// commas and colons need telling apart): strings are skipped with indexOf, keys are compared
// within their own object (a short list, a Set past 16 keys). No recursion: any depth.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
/** Keys of one object compared by a linear search up to this many, then in a Set. */
const LIST_KEYS = 16;
/** Strings scanned byte by byte up to this length, then with indexOf. */
const SHORT_STRING = 24;

interface Frame {
  readonly object: boolean;
  /** The object's keys so far (objects only). */
  keys: string[] | Set<string> | undefined;
  /** The last key (objects) or the element index (arrays), for the path of a duplicate. */
  key: string;
  index: number;
}

/**
 * The path of the first key that appears twice in one object (`messages[0].role`), or
 * undefined. `json` must be valid JSON (call it after JSON.parse succeeded).
 */
export function findDuplicateKey(json: Buffer): string | undefined {
  const stack: Frame[] = [];
  let top: Frame | undefined;
  let expectKey = false;
  const length = json.length;
  for (let i = 0; i < length; i++) {
    const byte = json[i];
    if (byte === QUOTE) {
      const end = stringEnd(json, i + 1);
      if (expectKey && top !== undefined) {
        const key = keyText(json, i, end);
        if (hasKey(top, key)) return formatIssuePath(pathOf(stack, key));
        top.key = key;
        expectKey = false;
      }
      i = end;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      top = { object: byte === OPEN_OBJECT, keys: undefined, key: '', index: 0 };
      stack.push(top);
      expectKey = top.object;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      stack.pop();
      top = stack[stack.length - 1];
      expectKey = false;
    } else if (byte === COMMA && top !== undefined) {
      if (top.object) expectKey = true;
      else top.index++;
    }
  }
  return undefined;
}

/** Index of the quote closing the string whose first character is at `from`. */
function stringEnd(json: Buffer, from: number): number {
  // Short strings (keys, roles) in a plain loop; long ones (contents) by the native search.
  const near = Math.min(from + SHORT_STRING, json.length);
  for (let at = from; at < near; at++) {
    const byte = json[at];
    if (byte === QUOTE) return at;
    if (byte === BACKSLASH) at++;
  }
  for (let at = json.indexOf(QUOTE, near); at !== -1; at = json.indexOf(QUOTE, at + 1)) {
    let slashes = 0;
    for (let back = at - 1; back >= from && json[back] === BACKSLASH; back--) slashes++;
    if (slashes % 2 === 0) return at;
  }
  return json.length;
}

/** A key as JSON.parse reads it (escapes decoded, so `"a"` and `"\u0061"` are the same key). */
function keyText(json: Buffer, open: number, close: number): string {
  let ascii = true;
  for (let at = open + 1; at < close; at++) {
    const byte = json[at] as number;
    if (byte === BACKSLASH) return JSON.parse(json.toString('utf8', open, close + 1)) as string;
    if (byte >= 0x80) ascii = false;
  }
  return json.toString(ascii ? 'latin1' : 'utf8', open + 1, close);
}

/** Notes `key` in the object; true when it was there already. */
function hasKey(frame: Frame, key: string): boolean {
  const keys = frame.keys;
  if (keys === undefined) {
    frame.keys = [key];
    return false;
  }
  if (Array.isArray(keys)) {
    if (keys.includes(key)) return true;
    keys.push(key);
    if (keys.length > LIST_KEYS) frame.keys = new Set(keys);
    return false;
  }
  if (keys.has(key)) return true;
  keys.add(key);
  return false;
}

function pathOf(stack: readonly Frame[], key: string): Array<string | number> {
  const path: Array<string | number> = [];
  for (let depth = 0; depth < stack.length - 1; depth++) {
    const frame = stack[depth] as Frame;
    path.push(frame.object ? frame.key : frame.index);
  }
  path.push(key);
  return path;
}
