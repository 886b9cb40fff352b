import { Transform, type TransformCallback } from 'node:stream';

// A large plain JSON answer that nothing in the gateway needs to parse (an untranslated
// embeddings or chat answer, no output guardrails) is relayed as it arrives rather than held
// whole. Usage and the model are still wanted (cost, token limits, metrics): this pass-through
// reads the top-level "usage" and "model" values from the bytes as they go by, in one linear
// pass with constant memory, and hands them over parsed when the answer ends.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
/** Most bytes of one captured value; a larger "usage" is not a usage block anyone sends. */
const MAX_CAPTURED_BYTES = 64 * 1024;
const WANTED = new Set(['usage', 'model']);

/** The top-level members read from a JSON answer: `{ usage?, model? }`. */
export type ScannedMembers = Record<string, unknown>;

export class JsonUsageScanner extends Transform {
  readonly #onEnd: (members: ScannedMembers) => void;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #expectKey = false;
  #keyMode = false;
  #key = '';
  #lastKey = '';
  #capturing: string | undefined;
  #captured: Buffer[] = [];
  #capturedSize = 0;
  readonly #members: ScannedMembers = {};

  /** `onEnd` gets the members read once the whole answer has passed. */
  constructor(onEnd: (members: ScannedMembers) => void) {
    super();
    this.#onEnd = onEnd;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#scan(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.#onEnd(this.#members);
    callback();
  }

  #scan(chunk: Buffer): void {
    let captureFrom = this.#capturing === undefined ? -1 : 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (byte === BACKSLASH) this.#escaped = true;
        else if (byte === QUOTE) {
          this.#inString = false;
          if (this.#keyMode) {
            this.#keyMode = false;
            this.#lastKey = this.#key;
          }
        } else if (this.#keyMode && this.#key.length <= 8) this.#key += String.fromCharCode(byte as number);
        continue;
      }
      if (byte === QUOTE) {
        this.#inString = true;
        if (this.#depth === 1 && this.#expectKey) {
          this.#expectKey = false;
          this.#keyMode = true;
          this.#key = '';
        }
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        this.#depth++;
        if (this.#depth === 1) this.#expectKey = byte === OPEN_OBJECT;
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        this.#depth--;
        if (this.#depth === 0 && captureFrom !== -1) {
          this.#keep(chunk, captureFrom, i);
          captureFrom = -1;
        }
      } else if (this.#depth === 1) {
        if (byte === COLON && WANTED.has(this.#lastKey)) {
          this.#capturing = this.#lastKey;
          this.#captured = [];
          this.#capturedSize = 0;
          captureFrom = i + 1;
        } else if (byte === COMMA) {
          this.#expectKey = true;
          if (captureFrom !== -1) {
            this.#keep(chunk, captureFrom, i);
            captureFrom = -1;
          }
        }
      }
    }
    // A value that goes on in the next chunk: keep this chunk's part (copied, so the chunk can go).
    if (captureFrom !== -1 && this.#capturing !== undefined) this.#append(chunk.subarray(captureFrom));
  }

  /** The captured value ends at `end`: parse it and note it. */
  #keep(chunk: Buffer, from: number, end: number): void {
    const name = this.#capturing;
    if (name === undefined) return;
    this.#append(chunk.subarray(from, end));
    this.#capturing = undefined;
    if (this.#capturedSize > MAX_CAPTURED_BYTES) return;
    try {
      this.#members[name] = JSON.parse(Buffer.concat(this.#captured, this.#capturedSize).toString('utf8'));
    } catch {
      // Not JSON: the answer's usage stays unknown, as for any answer without one.
    }
    this.#captured = [];
    this.#capturedSize = 0;
  }

  #append(part: Buffer): void {
    this.#capturedSize += part.length;
    if (this.#capturedSize <= MAX_CAPTURED_BYTES) this.#captured.push(Buffer.from(part));
  }
}
