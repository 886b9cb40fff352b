import { randomFillSync } from 'node:crypto';

// A time-ordered (version 7) UUID as one string: 48 bits of Unix milliseconds, then 74 random
// bits from the CSPRNG (drawn from a pool, as crypto.randomUUID() does). Time-ordered, each new
// record lands at the end of the log store's primary-key index instead of dirtying a random
// page of it (the SQLite worker's CPU per record ≈ halves: docs/performance.md). It is written
// into a buffer and made one 36-byte string: crypto.randomUUID() builds its text from ~20
// concatenated pieces, ≈ 600 bytes of heap a call.

const POOL_BYTES = 16 * 256;
const pool = Buffer.allocUnsafeSlow(POOL_BYTES);
let poolAt = POOL_BYTES;
const text = Buffer.allocUnsafeSlow(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');
// Where each of the 16 bytes goes in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
text[8] = text[13] = text[18] = text[23] = 0x2d;

/** A new UUID (RFC 9562 version 7: Unix milliseconds, then random), lower-case. */
export function randomRecordId(now: number = Date.now()): string {
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  // 48-bit big-endian milliseconds in bytes 0–5 (2^48 ms lasts until the year 10889).
  const high = Math.floor(now / 0x1_0000_0000);
  const low = now >>> 0;
  for (let index = 0; index < 16; index++) {
    let byte = pool[poolAt + index] as number;
    if (index < 2) byte = (high >>> (8 * (1 - index))) & 0xff;
    else if (index < 6) byte = (low >>> (8 * (5 - index))) & 0xff;
    else if (index === 6) byte = (byte & 0x0f) | 0x70; // version 7
    else if (index === 8) byte = (byte & 0x3f) | 0x80; // variant 10
    const at = AT[index] as number;
    text[at] = HEX[byte >> 4] as number;
    text[at + 1] = HEX[byte & 0x0f] as number;
  }
  poolAt += 16;
  return text.toString('latin1', 0, 36);
}
