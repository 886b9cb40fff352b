import { Transform, type TransformCallback } from 'node:stream';

// The gateway's one server-sent-events splitter (WHATWG framing), used by every place that
// reads SSE: provider stream translation and the relay's one frame pipeline
// (proxy/streams/sse-frame-pipeline.ts), whose stages — guardrail tail, cache assembler,
// usage tap — share its frames. Feed it bytes as they arrive; it returns complete frames. Tolerates
// CRLF/CR line ends, comment lines (keep-alives), events without data, and frames split
// anywhere across TCP chunks.
//
// Upstream answers are untrusted: each byte is scanned once (a partial line is kept as
// pieces and never rescanned), and one event may hold at most MAX_SSE_EVENT_BYTES.

/**
 * The largest single SSE event accepted from an upstream (field names and line ends
 * included): 4 MiB — far above any real chunk (Responses API `response.completed` events
 * carry the whole answer, image-generation partials a few hundred KiB of base64), small
 * enough that a hostile upstream cannot make the gateway hold much per stream.
 */
export const MAX_SSE_EVENT_BYTES = 4 * 1024 * 1024;

const LF = 0x0a;

export interface SseEvent {
  /** The `event:` field, or undefined for the default `message` event. */
  readonly event: string | undefined;
  /** The `data:` lines joined with "\n". */
  readonly data: string;
  readonly id: string | undefined;
}

/** SseFrame.json of a frame whose data is not JSON. */
export const NOT_JSON: unique symbol = Symbol('not JSON');
const UNPARSED: unique symbol = Symbol('unparsed');

/** An event's data as JSON, or NOT_JSON (the one parse every SSE reader uses). */
export function parseEventData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return NOT_JSON;
  }
}

/**
 * A frame: the event plus its exact text (for pass-through), up to and including the blank
 * line. Every stage a stream passes through reads the same frame objects, so the data is
 * parsed as JSON at most once, and only when some stage asks for it.
 */
export class SseFrame implements SseEvent {
  readonly raw: string;
  readonly event: string | undefined;
  readonly data: string;
  readonly id: string | undefined;
  /** False for frames that carry no event (blank lines, comments only). */
  readonly dispatch: boolean;
  #json: unknown;

  constructor(raw: string, event: string | undefined, data: string, id: string | undefined, dispatch: boolean, json: unknown = UNPARSED) {
    this.raw = raw;
    this.event = event;
    this.data = data;
    this.id = id;
    this.dispatch = dispatch;
    this.#json = json;
  }

  /** A data-only frame the gateway writes itself: its JSON is known, never parsed. */
  static of(payload: unknown): SseFrame {
    const data = JSON.stringify(payload);
    return new SseFrame(`data: ${data}\n\n`, undefined, data, undefined, true, payload);
  }

  /** A named event the gateway writes (Anthropic's Messages stream); `payload` is what `data` means, when known. */
  static named(event: string, data: string, payload: unknown = UNPARSED): SseFrame {
    return new SseFrame(`event: ${event}\ndata: ${data}\n\n`, event, data, undefined, true, payload);
  }

  /** The data as JSON (parsed on first use, then shared), or NOT_JSON. Treat it as read-only. */
  get json(): unknown {
    if (this.#json === UNPARSED) this.#json = parseEventData(this.data);
    return this.#json;
  }

  /**
   * The same event written differently (`raw` and `data` change together); the parse is
   * kept only when `sameJson` says the new data means the same to every reader (a
   * `"usage":null` member cut out of it).
   */
  rewritten(raw: string, data: string, sameJson: boolean): SseFrame {
    return new SseFrame(raw, this.event, data, this.id, this.dispatch, sameJson ? this.#json : UNPARSED);
  }
}

/** An upstream event over the cap; the stream cannot go on. */
export class SseEventTooLargeError extends Error {
  readonly code = 'AIGW_ERR_UPSTREAM_INVALID_RESPONSE';
  constructor(limit: number) {
    super(`The provider sent a stream event larger than ${limit} bytes; the stream was ended.`);
    this.name = 'SseEventTooLargeError';
  }
}

export class SseFrameSplitter {
  readonly #decoder = new TextDecoder();
  readonly #max: number;
  /** Pieces of the line not yet ended. */
  #line: string[] = [];
  #lineLength = 0;
  /** Text of the current frame's complete lines, with their line ends. */
  #raw: string[] = [];
  #rawLength = 0;
  /** The last chunk ended in CR: an LF opening the next one belongs to it. */
  #skipLf = false;
  /** The decoder holds no part of a character (the last chunk it decoded ended in ASCII). */
  #decoderEmpty = true;
  #event: string | undefined;
  #data: string[] = [];
  #hasData = false;
  #id: string | undefined;

  constructor(options: { maxEventBytes?: number } = {}) {
    this.#max = options.maxEventBytes ?? MAX_SSE_EVENT_BYTES;
  }

  /** Splits a chunk; returns the frames it completed. Throws SseEventTooLargeError past the cap. */
  push(chunk: Buffer | Uint8Array | string): SseFrame[] {
    if (typeof chunk !== 'string' && this.atFrameStart) {
      const one = this.#oneDataFrame(chunk);
      if (one !== undefined) return [one];
    }
    const text = typeof chunk === 'string' ? chunk : this.#decode(chunk);
    const frames: SseFrame[] = [];
    let position = 0;
    if (this.#skipLf && text.length > 0) {
      this.#skipLf = false;
      if (text.charCodeAt(0) === 10) {
        this.#append('\n');
        position = 1;
      }
    }
    let lf = text.indexOf('\n', position);
    let cr = text.indexOf('\r', position);
    for (;;) {
      // Each search starts where the last one stopped: linear in the input.
      if (lf !== -1 && lf < position) lf = text.indexOf('\n', position);
      if (cr !== -1 && cr < position) cr = text.indexOf('\r', position);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) break;
      let next = end + 1;
      if (end === cr) {
        if (next === text.length) this.#skipLf = true;
        else if (text.charCodeAt(next) === 10) next++;
      }
      this.#completeLine(text.slice(position, end), text.slice(end, next), frames);
      position = next;
    }
    if (position < text.length) {
      const rest = text.slice(position);
      this.#line.push(rest);
      this.#lineLength += rest.length;
      this.#checkSize();
    }
    return frames;
  }

  /**
   * The common chunk — one whole `data:` event of one line, LF-ended (each upstream write is
   * one event) — as its frame, without the general line walk; undefined for anything else.
   */
  #oneDataFrame(chunk: Buffer | Uint8Array): SseFrame | undefined {
    const length = chunk.length;
    // "data:" first, "\n\n" last; an ASCII last byte leaves no half character to hold.
    if (length < 7 || chunk[length - 1] !== LF || chunk[length - 2] !== LF || chunk[0] !== 0x64 || chunk[1] !== 0x61 || chunk[2] !== 0x74 || chunk[3] !== 0x61 || chunk[4] !== 0x3a) return undefined;
    const text = (Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, length)).toString();
    if (text.indexOf('\n') !== text.length - 2 || text.includes('\r')) return undefined;
    if (text.length > this.#max) throw new SseEventTooLargeError(this.#max);
    return new SseFrame(text, undefined, text.slice(text.charCodeAt(5) === 32 ? 6 : 5, -2), this.#id, true);
  }

  /** Decodes through the streaming decoder, noting whether it may hold part of a character. */
  #decode(chunk: Buffer | Uint8Array): string {
    if (chunk.length > 0) this.#decoderEmpty = (chunk[chunk.length - 1] as number) < 0x80;
    return this.#decoder.decode(chunk, { stream: true });
  }

  /** Nothing of a line, a frame or a character is held: the next byte starts a new frame. */
  get atFrameStart(): boolean {
    return this.#decoderEmpty && this.#lineLength === 0 && this.#rawLength === 0 && this.#line.length === 0 && !this.#skipLf;
  }

  /** Flushes the final frame (one not followed by a blank line). */
  end(): SseFrame[] {
    const frames = this.push(this.#decoderEmpty ? '' : this.#decoder.decode());
    if (this.#lineLength > 0) this.#completeLine('', '', frames);
    if (this.#rawLength > 0) frames.push(this.#frame());
    return frames;
  }

  #append(text: string): void {
    this.#raw.push(text);
    this.#rawLength += text.length;
  }

  #checkSize(): void {
    if (this.#rawLength + this.#lineLength > this.#max) throw new SseEventTooLargeError(this.#max);
  }

  #completeLine(tail: string, ending: string, frames: SseFrame[]): void {
    let line = tail;
    if (this.#line.length > 0) {
      this.#line.push(tail);
      line = this.#line.join('');
      this.#line = [];
      this.#lineLength = 0;
    }
    this.#append(line);
    if (ending !== '') this.#append(ending);
    this.#checkSize();
    if (line === '') {
      if (ending !== '') frames.push(this.#frame());
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' comment
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.#data.push(value);
      this.#hasData = true;
    } else if (field === 'event') this.#event = value;
    else if (field === 'id') this.#id = value;
  }

  #frame(): SseFrame {
    const frame = new SseFrame(
      this.#raw.length === 1 ? (this.#raw[0] as string) : this.#raw.join(''),
      this.#event,
      this.#data.length === 1 ? (this.#data[0] as string) : this.#data.join('\n'),
      this.#id,
      this.#hasData || this.#event !== undefined,
    );
    this.#raw = [];
    this.#rawLength = 0;
    this.#event = undefined;
    this.#data = [];
    this.#hasData = false;
    return frame;
  }
}

/** The events `chunk` completes, or undefined once one is over the cap (for readers that give up then). */
export function eventsOf(splitter: SseFrameSplitter, chunk: Buffer | Uint8Array | string): SseFrame[] | undefined {
  try {
    return splitter.push(chunk).filter((frame) => frame.dispatch);
  } catch (error) {
    if (error instanceof SseEventTooLargeError) return undefined;
    throw error;
  }
}

/**
 * Where a stream's frames come from, as its bytes arrive: the splitter itself for SSE that
 * is relayed as it is, or a provider's translator, which emits the client's frames (built
 * from the objects it made, so no later stage parses them again).
 */
export interface SseFrameSource {
  push(chunk: Buffer | Uint8Array | string): SseFrame[];
  /** The upstream ended: whatever is left. */
  end(): SseFrame[];
}

/** How a translator turns one upstream event (and the end) into the client's frames. */
export interface SseEventTranslation {
  event(frame: SseFrame, out: SseFrame[]): void;
  end?(out: SseFrame[]): void;
}

/**
 * A translator over an SSE upstream: the one splitter reads its events (each parsed at most
 * once, `frame.json`) and `translation` writes the client's frames. An event over the cap
 * throws SseEventTooLargeError, as it does for SSE relayed as it is: the relay then ends the
 * client's stream with its error event and aborts the upstream (a translation that went on
 * could only end a cut answer as if it were whole).
 */
export class SseEventTranslator implements SseFrameSource {
  readonly #splitter: SseFrameSplitter;
  readonly #translation: SseEventTranslation;

  constructor(translation: SseEventTranslation, options: { maxEventBytes?: number } = {}) {
    this.#translation = translation;
    this.#splitter = new SseFrameSplitter(options);
  }

  push(chunk: Buffer | Uint8Array | string): SseFrame[] {
    return this.#translate(this.#splitter.push(chunk));
  }

  end(): SseFrame[] {
    const out = this.#translate(this.#splitter.end());
    this.#translation.end?.(out);
    return out;
  }

  #translate(frames: SseFrame[]): SseFrame[] {
    const out: SseFrame[] = [];
    for (const frame of frames) if (frame.dispatch) this.#translation.event(frame, out);
    return out;
  }
}

/**
 * A pass-through that only counts: bytes go on untouched, but an event growing past the cap
 * fails the stream (SseEventTooLargeError) before anything downstream buffers it. Scans each
 * byte once, so a 50 MB event costs one pass and at most the cap in memory downstream.
 */
export class SseEventSizeGuard extends Transform {
  readonly #max: number;
  #eventBytes = 0;
  #atLineStart = true;
  #afterCr = false;

  constructor(maxEventBytes = MAX_SSE_EVENT_BYTES) {
    super();
    this.#max = maxEventBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let eventBytes = this.#eventBytes;
    let atLineStart = this.#atLineStart;
    let afterCr = this.#afterCr;
    for (let index = 0; index < chunk.length; index++) {
      const byte = chunk[index];
      if (byte === 10 && afterCr) {
        afterCr = false; // the LF of a CRLF
        continue;
      }
      afterCr = byte === 13;
      if (byte === 10 || byte === 13) {
        if (atLineStart) eventBytes = 0; // a blank line ends the event
        atLineStart = true;
      } else {
        atLineStart = false;
        if (++eventBytes > this.#max) {
          callback(new SseEventTooLargeError(this.#max));
          return;
        }
      }
    }
    this.#eventBytes = eventBytes;
    this.#atLineStart = atLineStart;
    this.#afterCr = afterCr;
    callback(null, chunk);
  }
}

/**
 * `source`'s frames through translation steps, in order (the Messages ingress: a provider's
 * chat frames → Anthropic frames → the usage reader). Each step sees every frame, keep-alives
 * included, and decides what goes on.
 */
export function translatedSource(source: SseFrameSource, ...steps: SseEventTranslation[]): SseFrameSource {
  const through = (frames: SseFrame[], last: boolean): SseFrame[] => {
    let current = frames;
    for (const step of steps) {
      const out: SseFrame[] = [];
      for (const frame of current) step.event(frame, out);
      if (last) step.end?.(out);
      current = out;
    }
    return current;
  };
  return { push: (chunk) => through(source.push(chunk), false), end: () => through(source.end(), true) };
}


export const SSE_DONE = 'data: [DONE]\n\n';

/** `data: [DONE]`, the end of an OpenAI stream. */
export const DONE_FRAME = new SseFrame(SSE_DONE, undefined, '[DONE]', undefined, true, NOT_JSON);
