import { randomFillSync } from 'node:crypto';

// A random (version 4) UUID as one string: crypto.randomUUID() is as random (the same CSPRNG,
// also drawn from a pool) but builds its text from ~20 concatenated pieces, ≈ 600 bytes of
// heap a call; this writes the 36 characters into a buffer and makes one 36-byte string.

const POOL_BYTES = 16 * 256;
const pool = Buffer.allocUnsafeSlow(POOL_BYTES);
let poolAt = POOL_BYTES;
const text = Buffer.allocUnsafeSlow(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');
// Where each of the 16 bytes goes in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
text[8] = text[13] = text[18] = text[23] = 0x2d;

/** A new random UUID (RFC 9562 version 4), lower-case: what crypto.randomUUID() returns. */
export function randomRecordId(): string {
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  for (let index = 0; index < 16; index++) {
    let byte = pool[poolAt + index] as number;
    if (index === 6) byte = (byte & 0x0f) | 0x40; // version 4
    else if (index === 8) byte = (byte & 0x3f) | 0x80; // variant 10
    const at = AT[index] as number;
    text[at] = HEX[byte >> 4] as number;
    text[at + 1] = HEX[byte & 0x0f] as number;
  }
  poolAt += 16;
  return text.toString('latin1', 0, 36);
}
