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
const FNV_OFFSET = 0x811c9dc5 | 0; // as an int32, like every hash stored in the Int32Array
const FNV_PRIME = 0x01000193;
// Scratch stacks shared by every call (the scan is synchronous and never re-entered), so a
// body costs no object or array per key or per nested value:
//   keys:   per key of every open object, three numbers — its hash, where its bytes start
//           and end; an object's keys are contiguous and dropped when it closes;
//   frames: per open object or array, three numbers — 1 for an object (0: an array), where
//           its keys start in `keys`, its element index (arrays, for the path of a duplicate).
// Grown by doubling (bounded by the body: one frame per bracket, one key per quote), and
// dropped after a body that grew them past KEEP_SLOTS.
const KEEP_SLOTS = 3 * 1024;
let keys: Int32Array = new Int32Array(3 * 64);
let frames: Int32Array = new Int32Array(3 * 32);
/** A key's bytes decoded (by key slot), when it had escapes; rare, so made only then. */
let decodedKeys: Map<number, Buffer> | undefined;
/** Per open object with many keys (by frame depth): hash → first key slot with it. */
let byHashOf: Map<number, Map<number, number>> | undefined;

function grown(array: Int32Array, needed: number): Int32Array {
  if (needed <= array.length) return array;
  const larger = new Int32Array(Math.max(needed, 2 * array.length));
  larger.set(array);
  return larger;
}

/**
 * The path of the first key that appears twice in one object (`messages[0].role`), or
 * undefined. `json` must be valid JSON (call it after JSON.parse succeeded).
 */
export function findDuplicateKey(json: Buffer): string | undefined {
  decodedKeys = undefined;
  byHashOf = undefined;
  try {
    return scan(json);
  } finally {
    if (keys.length > KEEP_SLOTS) keys = new Int32Array(3 * 64);
    if (frames.length > KEEP_SLOTS) frames = new Int32Array(3 * 32);
    decodedKeys = undefined;
    byHashOf = undefined;
  }
}

function scan(json: Buffer): string | undefined {
  let depth = 0;
  /** Key slots in use by the open objects. */
  let keyTop = 0;
  let expectKey = false;
  const length = json.length;
  for (let i = 0; i < length; i++) {
    const byte = json[i];
    if (byte === QUOTE) {
      if (expectKey && depth > 0) {
        const end = keyEnd(json, i + 1);
        if (noteKey(json, i + 1, end, depth, keyTop)) return formatIssuePath(pathOf(json, depth, keyTop + 1));
        keyTop++;
        i = end;
        expectKey = false;
      } else {
        i = stringEnd(json, i + 1);
      }
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      frames = grown(frames, 3 * depth + 3);
      const object = byte === OPEN_OBJECT;
      frames[3 * depth] = object ? 1 : 0;
      frames[3 * depth + 1] = keyTop;
      frames[3 * depth + 2] = 0;
      depth++;
      expectKey = object;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      if (depth > 0) {
        depth--;
        keyTop = frames[3 * depth + 1] as number;
        byHashOf?.delete(depth);
      }
      expectKey = false;
    } else if (byte === COMMA && depth > 0) {
      if (frames[3 * (depth - 1)] === 1) expectKey = true;
      else frames[3 * (depth - 1) + 2] = (frames[3 * (depth - 1) + 2] as number) + 1;
    }
  }
  return undefined;
}

/** Index of the quote closing the key whose first byte is at `from` (keys are short: a plain loop). */
function keyEnd(json: Buffer, from: number): number {
  let end = from;
  for (; end < json.length; end++) {
    const byte = json[end];
    if (byte === QUOTE) break;
    if (byte === BACKSLASH) end++;
  }
  return end;
}

/**
 * Notes the key json[from, end) in slot `slot`, the next key of the innermost open object
 * (frame depth - 1); true when that object has it already (the slot's key then, for the path).
 */
function noteKey(json: Buffer, from: number, end: number, depth: number, slot: number): boolean {
  let hash = FNV_OFFSET;
  let escaped = false;
  for (let at = from; at < end; at++) {
    const byte = json[at] as number;
    if (byte === BACKSLASH) {
      escaped = true;
      at++;
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
  const frame = depth - 1;
  const first = frames[3 * frame + 1] as number;
  const byHash = byHashOf?.get(frame);
  const seen = findKey(json, byHash, first, slot, hash, from, end, decoded);
  keys = grown(keys, 3 * slot + 3);
  keys[3 * slot] = hash;
  keys[3 * slot + 1] = from;
  keys[3 * slot + 2] = end;
  if (decoded !== undefined) (decodedKeys ??= new Map()).set(slot, decoded);
  else decodedKeys?.delete(slot);
  if (seen) return true;
  if (byHash !== undefined) {
    if (!byHash.has(hash)) byHash.set(hash, slot);
  } else if (slot - first + 1 > LIST_KEYS) {
    const map = new Map<number, number>();
    for (let k = first; k <= slot; k++) if (!map.has(keys[3 * k] as number)) map.set(keys[3 * k] as number, k);
    (byHashOf ??= new Map()).set(frame, map);
  }
  return false;
}

/** Whether the object's keys before `slot` (from `first`) have this one already. */
function findKey(json: Buffer, byHash: Map<number, number> | undefined, first: number, slot: number, hash: number, start: number, end: number, decoded: Buffer | undefined): boolean {
  const candidate = byHash?.get(hash);
  if (byHash !== undefined && candidate === undefined) return false;
  // A hash seen before (or a short object): compare bytes, from the first candidate on.
  for (let k = candidate ?? first; k < slot; k++) {
    if (keys[3 * k] === hash && sameKey(json, k, start, end, decoded)) return true;
  }
  return false;
}

function sameKey(json: Buffer, k: number, start: number, end: number, decoded: Buffer | undefined): boolean {
  const earlier = decodedKeys?.get(k);
  if (earlier !== undefined || decoded !== undefined) {
    // Escaped keys (rare): compared as buffers.
    const a = earlier ?? json.subarray(keys[3 * k + 1], keys[3 * k + 2]);
    return a.equals(decoded ?? json.subarray(start, end));
  }
  const from = keys[3 * k + 1] as number;
  if ((keys[3 * k + 2] as number) - from !== end - start) return false;
  for (let at = 0; at < end - start; at++) if (json[from + at] !== json[start + at]) return false;
  return true;
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

function keyName(json: Buffer, slot: number): string {
  const decoded = decodedKeys?.get(slot);
  return decoded !== undefined ? decoded.toString('utf8') : json.toString('utf8', keys[3 * slot + 1], keys[3 * slot + 2]);
}

/** The path to the last key of the innermost object: each enclosing object's last key, each array's index. */
function pathOf(json: Buffer, depth: number, keyTop: number): Array<string | number> {
  const path: Array<string | number> = [];
  for (let frame = 0; frame < depth; frame++) {
    // An object's keys end where the next frame's begin (the innermost one's at keyTop).
    const keysEnd = frame + 1 < depth ? (frames[3 * (frame + 1) + 1] as number) : keyTop;
    path.push(frames[3 * frame] === 1 ? keyName(json, keysEnd - 1) : (frames[3 * frame + 2] as number));
  }
  return path;
}
