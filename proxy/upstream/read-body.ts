import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';

// Reading an upstream body whole, bounded — shared by every place that must (plain
// answers, error bodies, forwarded control calls). A body with a declared length is read
// into one buffer of that size (no chunk list, no concatenated copy); a larger declared
// length than the cap is refused before a byte is read.

type Body = Dispatcher.ResponseData['body'];

/** The first bytes of a body, and whether that was all of it (the rest stays unread in the body). */
export interface BodyPrefix {
  readonly chunks: readonly Buffer[];
  readonly size: number;
  readonly ended: boolean;
}

let bufferedBytes = 0;
let bufferedPeak = 0;

/** Bytes of upstream bodies held by readBodyBytes right now, and the most at once (for tests and metrics). */
export function bufferedBodyBytes(): { readonly now: number; readonly peak: number } {
  return { now: bufferedBytes, peak: bufferedPeak };
}

/** Forgets the peak (tests). */
export function resetBufferedBodyPeak(): void {
  bufferedPeak = bufferedBytes;
}

/**
 * The whole body; past `limit` bytes (or a declared length past it) it is destroyed and a
 * 502 gateway error is thrown. `prefix` is what was read of it already.
 */
export async function readBodyBytes(body: Body | Readable, limit: number, declaredLength?: number, prefix?: BodyPrefix): Promise<Buffer> {
  const tooLarge = (): GatewayError => {
    body.destroy();
    return new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `The provider's answer is larger than ${limit} bytes.`);
  };
  if (declaredLength !== undefined && declaredLength > limit) throw tooLarge();
  if (prefix?.ended === true) return joined(prefix.chunks, prefix.size);
  // A declared length is a promise the sender may break: it sizes the buffer, the cap still holds.
  const target = declaredLength !== undefined && declaredLength >= (prefix?.size ?? 0) ? Buffer.allocUnsafe(declaredLength) : undefined;
  const chunks: Buffer[] = target === undefined ? [...(prefix?.chunks ?? [])] : [];
  let size = 0;
  if (target !== undefined) for (const chunk of prefix?.chunks ?? []) size += chunk.copy(target, size);
  else size = prefix?.size ?? 0;
  let counted = 0;
  const count = (bytes: number): void => {
    counted += bytes;
    bufferedBytes += bytes;
    if (bufferedBytes > bufferedPeak) bufferedPeak = bufferedBytes;
  };
  count(size);
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      if (size + buffer.length > limit || (target !== undefined && size + buffer.length > target.length)) {
        if (target !== undefined && size + buffer.length <= limit) {
          // Longer than declared: a broken answer, not one to cut short silently.
          body.destroy();
          throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `The provider's answer is longer than its declared ${declaredLength} bytes.`);
        }
        throw tooLarge();
      }
      if (target !== undefined) buffer.copy(target, size);
      else chunks.push(buffer);
      size += buffer.length;
      count(buffer.length);
    }
    if (target !== undefined) return size === target.length ? target : target.subarray(0, size);
    return joined(chunks, size);
  } finally {
    bufferedBytes -= counted;
  }
}

/** The first `limit` bytes as text (an error message needs no more); the rest is dropped. */
export async function readBodyText(body: Body, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      body.destroy();
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A prefix that was the whole body, as one buffer (what readBodyBytes returns for it, without a promise). */
export function prefixBytes(prefix: BodyPrefix): Buffer {
  return joined(prefix.chunks, prefix.size);
}

function joined(chunks: readonly Buffer[], size: number): Buffer {
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}
