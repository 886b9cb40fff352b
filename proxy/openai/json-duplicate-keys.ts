import { formatIssuePath } from './zod-issues.ts';

// JSON.parse keeps the last of two equal keys; the gateway validates that object but
// forwards the client's bytes, and a provider's parser may keep the first. `{"model":"ok",
// "model":"other"}` would then be checked as one request and run as another. A body with a
// key twice in one object is therefore refused.
//
// One linear pass over bytes JSON.parse has already accepted (so only strings, brackets,
// commas and colons need telling apart). No string is made per key: a key is its bytes in
// the body, hashed as they are scanned, and compared with the keys of its own object by hash
// then bytes (a Map past 16 keys). Long strings are skipped with indexOf. No recursion.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
/** Keys of one object compared by a linear search up to this many, then through a Map. */
const LIST_KEYS = 16;
/** Strings scanned byte by byte up to this length, then with indexOf. */
const SHORT_STRING = 24;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** An array's (never written). */
const NO_KEYS: number[] = [];

interface Frame {
  readonly object: boolean;
  /** Per key of the object, three numbers: its hash, and where its bytes start and end. */
  readonly keys: number[];
  /** A key's bytes decoded, when it had escapes. */
  decoded: Array<Buffer | undefined> | undefined;
  /** Hash → first key with it, once the object has many keys. */
  byHash: Map<number, number> | undefined;
  /** The element index (arrays), for the path of a duplicate. */
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
      if (expectKey && top !== undefined) {
        i = noteKey(json, i + 1, top);
        if (i < 0) return formatIssuePath(pathOf(json, stack));
        expectKey = false;
      } else {
        i = stringEnd(json, i + 1);
      }
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      const object = byte === OPEN_OBJECT;
      top = { object, keys: object ? [] : NO_KEYS, decoded: undefined, byHash: undefined, index: 0 };
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

/**
 * Reads the key starting at `from` into `frame`; returns the index of its closing quote, or
 * -1 when the object has it already (it is then the frame's last key, for the path).
 */
function noteKey(json: Buffer, from: number, frame: Frame): number {
  let hash = FNV_OFFSET;
  let escaped = false;
  let end = from;
  for (; end < json.length; end++) {
    const byte = json[end] as number;
    if (byte === QUOTE) break;
    if (byte === BACKSLASH) {
      escaped = true;
      end++;
      continue;
    }
    hash = Math.imul(hash ^ byte, FNV_PRIME);
  }
  let decoded: Buffer | undefined;
  if (escaped) {
    // `"\u0061"` is the key `a`: compared by what JSON.parse makes of it.
    decoded = Buffer.from(JSON.parse(json.toString('utf8', from - 1, end + 1)) as string, 'utf8');
    hash = FNV_OFFSET;
    for (const byte of decoded) hash = Math.imul(hash ^ byte, FNV_PRIME);
  }
  const seen = findKey(json, frame, hash, from, end, decoded);
  const index = frame.keys.length / 3;
  frame.keys.push(hash, from, end);
  if (decoded !== undefined || frame.decoded !== undefined) {
    frame.decoded ??= new Array<Buffer | undefined>(index);
    frame.decoded[index] = decoded;
  }
  if (seen) return -1;
  if (frame.byHash !== undefined) {
    if (!frame.byHash.has(hash)) frame.byHash.set(hash, index);
  } else if (index + 1 > LIST_KEYS) {
    frame.byHash = new Map();
    for (let k = 0; k <= index; k++) if (!frame.byHash.has(frame.keys[3 * k] as number)) frame.byHash.set(frame.keys[3 * k] as number, k);
  }
  return end;
}

/** Whether the object already has the key with these bytes. */
function findKey(json: Buffer, frame: Frame, hash: number, start: number, end: number, decoded: Buffer | undefined): boolean {
  const first = frame.byHash?.get(hash);
  if (frame.byHash !== undefined && first === undefined) return false;
  // A hash seen before (or a short object): compare bytes, from the first candidate on.
  const keys = frame.keys;
  for (let k = first ?? 0; 3 * k < keys.length; k++) {
    if (keys[3 * k] === hash && sameKey(json, frame, k, start, end, decoded)) return true;
  }
  return false;
}

function sameKey(json: Buffer, frame: Frame, k: number, start: number, end: number, decoded: Buffer | undefined): boolean {
  const a = frame.decoded?.[k] ?? json.subarray(frame.keys[3 * k + 1], frame.keys[3 * k + 2]);
  const b = decoded ?? json.subarray(start, end);
  return a.equals(b);
}

/** Index of the quote closing the string whose first character is at `from`. */
function stringEnd(json: Buffer, from: number): number {
  // Short strings (values like roles) in a plain loop; long ones (contents) by the native search.
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

function keyName(json: Buffer, frame: Frame, k: number): string {
  const decoded = frame.decoded?.[k];
  return decoded !== undefined ? decoded.toString('utf8') : json.toString('utf8', frame.keys[3 * k + 1], frame.keys[3 * k + 2]);
}

/** The path to the last key of the innermost object: each enclosing object's last key, each array's index. */
function pathOf(json: Buffer, stack: readonly Frame[]): Array<string | number> {
  return stack.map((frame) => (frame.object ? keyName(json, frame, frame.keys.length / 3 - 1) : frame.index));
}
