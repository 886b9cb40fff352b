// How a CachedAnswer is laid out as bytes in a shared store (Redis).
//
//   [format byte] [payload]          payload = metaJSON "\n" body (UTF-8)
//
// The format byte says whether the payload is gzip-compressed. The meta JSON
// (createdAt, headers, provider, model) cannot contain a raw newline (JSON.stringify escapes it), so the
// first "\n" ends it; the body follows as-is, never re-escaped into a JSON string.
// Payloads above a threshold (8 KiB by default) are gzipped: model answers are text and
// JSON, typically 3–6× smaller, which is Redis memory and network saved. Compression
// (off the response path) runs on libuv's thread pool, so a large answer never stalls the
// event loop. Decompression is on the HIT path: payloads up to 64 KiB (the gzip trailer
// says how big) are inflated synchronously — ~0.1–0.2 ms, less than the thread-pool hop —
// and larger ones on the pool.

import { promisify } from 'node:util';
import { constants, gunzip, gunzipSync, gzip } from 'node:zlib';
import type { CachedAnswer } from './response-cache-store.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Inflated sizes up to this are decompressed synchronously (see above). */
const SYNC_INFLATE_MAX_BYTES = 64 * 1024;

const PLAIN = 0x01;
const GZIP = 0x02;
const NEWLINE = 0x0a;

/** Payloads larger than this many bytes are gzip-compressed by default. */
export const DEFAULT_COMPRESS_ABOVE_BYTES = 8 * 1024;

interface AnswerMeta {
  c: number;
  h?: Record<string, string>;
  /** The answering provider and the model it was asked for. */
  p?: string;
  m?: string;
}

/** Serialises an answer, compressing payloads larger than `compressAboveBytes`. */
export async function encodeAnswer(answer: CachedAnswer, compressAboveBytes = DEFAULT_COMPRESS_ABOVE_BYTES): Promise<Buffer> {
  const meta: AnswerMeta = { c: answer.createdAt };
  if (answer.headers !== undefined) meta.h = { ...answer.headers };
  if (answer.provider !== undefined) meta.p = answer.provider;
  if (answer.model !== undefined) meta.m = answer.model;
  const payload = Buffer.from(`${JSON.stringify(meta)}\n${answer.body}`, 'utf8');
  if (payload.length <= compressAboveBytes) return Buffer.concat([Buffer.of(PLAIN), payload]);
  // Level 6 (zlib's default) costs ~1 ms per 100 KiB of JSON; higher levels gain little on it.
  const compressed = await gzipAsync(payload, { level: constants.Z_DEFAULT_COMPRESSION });
  return Buffer.concat([Buffer.of(GZIP), compressed]);
}

/** Parses what encodeAnswer wrote; undefined for bytes it did not write (an old or foreign value). */
export async function decodeAnswer(bytes: Buffer): Promise<CachedAnswer | undefined> {
  if (bytes.length < 2) return undefined;
  let payload: Buffer;
  if (bytes[0] === PLAIN) {
    payload = bytes.subarray(1);
  } else if (bytes[0] === GZIP) {
    const compressed = bytes.subarray(1);
    try {
      // ISIZE, the last 4 bytes of a gzip member: the inflated size (mod 2^32).
      const inflatedSize = compressed.length >= 18 ? compressed.readUInt32LE(compressed.length - 4) : Number.POSITIVE_INFINITY;
      payload = inflatedSize <= SYNC_INFLATE_MAX_BYTES ? gunzipSync(compressed) : await gunzipAsync(compressed);
    } catch {
      return undefined;
    }
  } else {
    return undefined;
  }
  const newline = payload.indexOf(NEWLINE);
  if (newline === -1) return undefined;
  let meta: unknown;
  try {
    meta = JSON.parse(payload.toString('utf8', 0, newline));
  } catch {
    return undefined;
  }
  if (typeof meta !== 'object' || meta === null || typeof (meta as AnswerMeta).c !== 'number') return undefined;
  const { c, h, p, m } = meta as AnswerMeta;
  const body = payload.toString('utf8', newline + 1);
  return {
    body,
    createdAt: c,
    ...(h !== undefined && typeof h === 'object' ? { headers: h } : {}),
    ...(typeof p === 'string' ? { provider: p } : {}),
    ...(typeof m === 'string' ? { model: m } : {}),
  };
}

/** True when `bytes` (as encodeAnswer wrote them) hold a compressed payload. */
export function isCompressed(bytes: Buffer): boolean {
  return bytes[0] === GZIP;
}
