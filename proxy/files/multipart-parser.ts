import { MultipartError } from '../errors.ts';
// A push parser for multipart/form-data (RFC 7578), so an upload is handled as it arrives:
// feed it the body's chunks, get back part headers and body pieces. It keeps at most one
// delimiter's worth of bytes between calls (plus a part's header block, bounded).

export type MultipartEvent =
  | { readonly kind: 'part'; readonly name: string; readonly filename: string | undefined; readonly contentType: string | undefined }
  | { readonly kind: 'data'; readonly data: Buffer }
  | { readonly kind: 'part-end' };

const MAX_HEADER_BLOCK = 16 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');



/** The boundary of a multipart/form-data content type, or undefined. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^;\s]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

export class MultipartParser {
  readonly #delimiter: Buffer;
  // The first delimiter has no CRLF before it; start as if one had been seen.
  #buffer: Buffer = CRLF;
  #state: 'preamble' | 'after-delimiter' | 'headers' | 'body' | 'done' = 'preamble';

  constructor(boundary: string) {
    this.#delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  push(chunk: Buffer): MultipartEvent[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const events: MultipartEvent[] = [];
    while (this.#step(events));
    return events;
  }

  /** Throws when the body ended before the closing delimiter. */
  end(): void {
    if (this.#state !== 'done') throw new MultipartError('multipart body ended before its closing boundary');
  }

  #step(events: MultipartEvent[]): boolean {
    switch (this.#state) {
      case 'preamble':
      case 'body': {
        const at = this.#buffer.indexOf(this.#delimiter);
        if (at === -1) {
          // Keep what could be the start of a delimiter; the rest is part data.
          const safe = this.#buffer.length - (this.#delimiter.length - 1);
          if (safe > 0) {
            if (this.#state === 'body') events.push({ kind: 'data', data: this.#buffer.subarray(0, safe) });
            this.#buffer = this.#buffer.subarray(safe);
          }
          return false;
        }
        if (this.#state === 'body') {
          if (at > 0) events.push({ kind: 'data', data: this.#buffer.subarray(0, at) });
          events.push({ kind: 'part-end' });
        }
        this.#buffer = this.#buffer.subarray(at + this.#delimiter.length);
        this.#state = 'after-delimiter';
        return true;
      }
      case 'after-delimiter': {
        if (this.#buffer.length < 2) return false;
        const next = this.#buffer.subarray(0, 2).toString('latin1');
        if (next === '--') {
          this.#state = 'done';
          this.#buffer = Buffer.alloc(0);
          return false;
        }
        if (next !== '\r\n') throw new MultipartError('malformed multipart boundary line');
        this.#buffer = this.#buffer.subarray(2);
        this.#state = 'headers';
        return true;
      }
      case 'headers': {
        const at = this.#buffer.indexOf(HEADER_END);
        if (at === -1) {
          if (this.#buffer.length > MAX_HEADER_BLOCK) throw new MultipartError('multipart part headers are too large');
          return false;
        }
        events.push(partHeaders(this.#buffer.subarray(0, at).toString('utf8')));
        // The delimiter carries the CRLF before it, so an empty part ends at index 0.
        this.#buffer = this.#buffer.subarray(at + HEADER_END.length);
        this.#state = 'body';
        return true;
      }
      case 'done':
        return false;
    }
  }
}

function partHeaders(block: string): MultipartEvent {
  let name: string | undefined;
  let filename: string | undefined;
  let contentType: string | undefined;
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const header = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (header === 'content-type') contentType = value;
    if (header !== 'content-disposition') continue;
    name = /(?:^|;)\s*name="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? /(?:^|;)\s*name=([^;\s]+)/i.exec(value)?.[1];
    filename = /;\s*filename="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? /;\s*filename=([^;\s]+)/i.exec(value)?.[1];
  }
  if (name === undefined) throw new MultipartError('a multipart part has no content-disposition name');
  return { kind: 'part', name, filename, contentType };
}
