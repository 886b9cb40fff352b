import { crc32 } from 'node:zlib';
import { EventStreamCodec, type Message } from '@smithy/core/event-streams';
import { MAX_SSE_EVENT_BYTES } from '../sse-parser.ts';
import { EventStreamFramingError } from '../../errors.ts';

// Incremental decoder for the AWS event-stream binary framing (application/vnd.amazon.eventstream):
//
//   [total length u32][headers length u32][prelude CRC32 u32][headers][payload][message CRC32 u32]
//
// Bytes arrive in arbitrary TCP chunks; this splits them into whole messages without
// re-copying or rescanning what is already buffered (a message is joined once, when whole),
// and hands each complete message to the AWS SDK's codec (@smithy/core), which checks both
// CRCs and parses the typed headers. The prelude's length is checked before anything is
// held, so at most one capped message is buffered.

const PRELUDE_BYTES = 12;
const MIN_MESSAGE_BYTES = 16;
/**
 * One message is capped like one SSE event (4 MiB, plus framing): Converse stream events are
 * small deltas, and the protocol's own 16 MiB ceiling is more than a gateway should hold per
 * stream for an untrusted upstream.
 */
export const MAX_EVENT_MESSAGE_BYTES = MAX_SSE_EVENT_BYTES + 1024;

export interface EventStreamMessage {
  /** String-valued headers (`:event-type`, `:message-type`, `:exception-type`, …). */
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: Buffer;
}


const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();
const codec = new EventStreamCodec(
  (bytes) => textDecoder.decode(bytes),
  (text) => textEncoder.encode(text),
);

export class EventStreamDecoder {
  #chunks: Buffer[] = [];
  #buffered = 0;
  /** Total length of the message being assembled, once its prelude has been checked. */
  #expected: number | undefined;

  /** Adds bytes; returns the messages they completed. Throws EventStreamFramingError on corrupt input. */
  push(chunk: Buffer): EventStreamMessage[] {
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    const messages: EventStreamMessage[] = [];
    for (;;) {
      if (this.#expected === undefined) {
        if (this.#buffered < PRELUDE_BYTES) break;
        this.#expected = this.#checkPrelude();
      }
      if (this.#buffered < this.#expected) break;
      const all = this.#chunks.length === 1 && this.#chunks[0] !== undefined ? this.#chunks[0] : Buffer.concat(this.#chunks);
      const message = all.subarray(0, this.#expected);
      const rest = all.subarray(this.#expected);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#buffered = rest.length;
      this.#expected = undefined;
      messages.push(decodeMessage(message));
    }
    return messages;
  }

  /** Bytes of an incomplete message still waiting (non-zero at end of stream = truncated). */
  get pendingBytes(): number {
    return this.#buffered;
  }

  #checkPrelude(): number {
    const prelude = this.#peek(PRELUDE_BYTES);
    const total = prelude.readUInt32BE(0);
    const headersLength = prelude.readUInt32BE(4);
    if (crc32(prelude.subarray(0, 8)) !== prelude.readUInt32BE(8)) {
      throw new EventStreamFramingError('event-stream prelude checksum mismatch');
    }
    if (total < MIN_MESSAGE_BYTES || total > MAX_EVENT_MESSAGE_BYTES || headersLength > total - MIN_MESSAGE_BYTES) {
      throw new EventStreamFramingError(`event-stream message length ${total} is out of range`);
    }
    return total;
  }

  /** The first `length` buffered bytes, copying only when they span chunks. */
  #peek(length: number): Buffer {
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= length) return first.subarray(0, length);
    return Buffer.concat(this.#chunks).subarray(0, length);
  }
}

function decodeMessage(bytes: Buffer): EventStreamMessage {
  let message: Message;
  try {
    message = codec.decode(bytes);
  } catch (error) {
    throw new EventStreamFramingError(`event-stream message rejected: ${error instanceof Error ? error.message : 'invalid'}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries(message.headers)) {
    if (header.type === 'string') headers[name] = header.value;
  }
  return { headers, payload: Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength) };
}
