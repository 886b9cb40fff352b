import { Transform, type TransformCallback } from 'node:stream';
import { SseFrameSplitter, type SseFrame, type SseFrameSource } from '../providers/sse-parser.ts';

// A streamed answer becomes SSE frames once, here — split from the upstream's SSE, or built by
// a provider's translator (the source) from the objects it made; the frames then pass through the
// stages in order (guardrail tail, cache assembler, usage tap…) and what the last stage
// passes on is written to the client. Stages share the frame objects, so an event's JSON
// is parsed at most once (SseFrame.json), and not at all when no stage reads it. A frame
// no stage rewrote goes out as its exact text: pass-through stays byte for byte.

/** What a stage passes on for one frame: the frame (or a rewrite), nothing, several, or later. */
export type StageOutput = SseFrame | undefined | readonly SseFrame[] | Promise<readonly SseFrame[]>;

export interface SseFrameStage {
  /** Sees each frame once, in order. A promise holds the stream until it settles (rare: a tail before [DONE]). */
  frame(frame: SseFrame): StageOutput;
  /** The upstream ended and every frame has passed. */
  end?(): void;
}

/**
 * The frame source (the one splitter unless a translator is given) and the stages: bytes in,
 * the client's text out, chunk by chunk. A promise only when a stage waits. An event over the
 * splitter's cap throws SseEventTooLargeError. Used as it is by the relay (FrameRelay, one
 * stream hop per chunk) and wrapped as a Transform below.
 */
export class SseFrameFlow {
  readonly #source: SseFrameSource;
  /** The source when it is the splitter: only then can a chunk's own bytes be what goes out. */
  readonly #splitter: SseFrameSplitter | undefined;
  readonly #stages: readonly SseFrameStage[];
  /** Every chunk so far ended where a frame did (nothing held by the splitter). */
  #aligned = true;
  /** A stage rewrote, dropped, split or held a frame of the current chunk. */
  #rewrote = false;

  constructor(stages: readonly SseFrameStage[], options: { maxEventBytes?: number; source?: SseFrameSource } = {}) {
    this.#stages = stages;
    this.#splitter = options.source === undefined ? new SseFrameSplitter(options) : undefined;
    this.#source = options.source ?? (this.#splitter as SseFrameSplitter);
  }

  /**
   * The client's text for a chunk. A chunk of whole frames that every stage let through
   * unchanged goes out as the chunk itself: its bytes are that text, and pushing them saves
   * re-encoding it (the common case: each upstream write is one event). Bytes the decoder
   * would have replaced (invalid UTF-8) then go out as the upstream sent them, as they do
   * when no stage is on the stream at all.
   */
  chunk(chunk: Buffer): string | Buffer | Promise<string> {
    const aligned = this.#aligned;
    const frames = this.#source.push(chunk);
    this.#aligned = this.#splitter !== undefined && this.#splitter.atFrameStart;
    this.#rewrote = false;
    const out = this.#through(frames, 0);
    return typeof out === 'string' && out !== '' && aligned && this.#aligned && !this.#rewrote ? chunk : out;
  }

  /** The upstream ended: the last frames, then every stage's end (not after a failure). */
  end(): string | Promise<string> {
    const out = this.#through(this.#source.end(), 0);
    if (typeof out === 'string') {
      this.#ended();
      return out;
    }
    return out.then((text) => {
      this.#ended();
      return text;
    });
  }

  #ended(): void {
    for (const stage of this.#stages) stage.end?.();
  }

  /** The text the frames become after stages `from`…; a promise only when a stage waits. */
  #through(frames: readonly SseFrame[], from: number): string | Promise<string> {
    let out = '';
    for (let index = 0; index < frames.length; index++) {
      const text = this.#one(frames[index] as SseFrame, from);
      if (typeof text === 'string') {
        out += text;
        continue;
      }
      // A stage waits: the rest of these frames follow once it is done, in order.
      const before = out;
      const rest = frames.slice(index + 1);
      return text.then((held) => {
        const after = this.#through(rest, from);
        return typeof after === 'string' ? before + held + after : after.then((more) => before + held + more);
      });
    }
    return out;
  }

  #one(frame: SseFrame, from: number): string | Promise<string> {
    let current = frame;
    for (let index = from; index < this.#stages.length; index++) {
      const output = (this.#stages[index] as SseFrameStage).frame(current);
      if (output === current) continue;
      this.#rewrote = true;
      if (output === undefined) return '';
      if (output instanceof Promise) return output.then((frames) => this.#through(frames, index + 1));
      if (Array.isArray(output)) return this.#through(output as readonly SseFrame[], index + 1);
      current = output as SseFrame;
    }
    return current.raw;
  }
}

/** SseFrameFlow as a stream (bytes in, the client's text out), for callers that pipe. */
export class SseFramePipeline extends Transform {
  readonly #flow: SseFrameFlow;

  constructor(stages: readonly SseFrameStage[], options: { maxEventBytes?: number; source?: SseFrameSource } = {}) {
    super();
    this.#flow = new SseFrameFlow(stages, options);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    SseFramePipeline.#run(() => this.#flow.chunk(chunk), callback);
  }

  override _flush(callback: TransformCallback): void {
    SseFramePipeline.#run(() => this.#flow.end(), callback);
  }

  static #run(step: () => string | Buffer | Promise<string>, callback: TransformCallback): void {
    let out: string | Buffer | Promise<string>;
    try {
      out = step();
    } catch (error) {
      callback(error as Error);
      return;
    }
    if (!(out instanceof Promise)) callback(null, out.length === 0 ? undefined : out);
    else out.then((text) => callback(null, text === '' ? undefined : text), (error: unknown) => callback(error as Error));
  }
}
