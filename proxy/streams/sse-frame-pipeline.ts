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
  readonly #stages: readonly SseFrameStage[];

  constructor(stages: readonly SseFrameStage[], options: { maxEventBytes?: number; source?: SseFrameSource } = {}) {
    this.#stages = stages;
    this.#source = options.source ?? new SseFrameSplitter(options);
  }

  chunk(chunk: Buffer): string | Promise<string> {
    return this.#through(this.#source.push(chunk), 0);
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

  static #run(step: () => string | Promise<string>, callback: TransformCallback): void {
    let out: string | Promise<string>;
    try {
      out = step();
    } catch (error) {
      callback(error as Error);
      return;
    }
    if (typeof out === 'string') callback(null, out === '' ? undefined : out);
    else out.then((text) => callback(null, text === '' ? undefined : text), (error: unknown) => callback(error as Error));
  }
}
