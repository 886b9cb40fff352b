import { Readable } from 'node:stream';

// The streamed answer's one hop between the upstream body and the client: each chunk goes
// through the step (the SSE frames and their stages) and is pushed here, in the same call.
// It replaces a Transform piped into a PassThrough (the error event's hop): two stream hops,
// two pipes and their ticks per chunk, which the first chunk waited for (issue 32).

/** What the relay makes of the upstream's bytes. */
export interface RelayStep {
  /** The client's text for a chunk ('' passes nothing on); a promise holds the stream until it settles. Throws to fail the stream. */
  chunk(chunk: Buffer): string | Buffer | Promise<string>;
  /** The upstream ended: the last text. */
  end(): string | Promise<string>;
}

/** Passes the bytes on unchanged. */
export const PASS_THROUGH: RelayStep = { chunk: (chunk) => chunk, end: () => '' };

/**
 * A failure (the upstream's or the step's) turned into the stream's last text (an error
 * event, worded for the client), or undefined: the stream fails with the error.
 */
export type RelayFailure = (error: Error) => string | undefined;

/**
 * Where the relay's text goes: a Readable's push and destroy (FrameRelay), or a response
 * written straight (endpoints/plain-write.ts).
 */
export interface RelayOutput {
  /** A piece of the answer, or null at its end; false: nothing more is read until RelayCore.resume. */
  push(out: string | Buffer | null): boolean;
  destroy(error: Error): unknown;
}

/** The relay itself: reads the source, runs the step, pushes to the output. */
export class RelayCore {
  readonly #source: Readable;
  readonly #step: RelayStep;
  readonly #failure: RelayFailure;
  readonly #out: RelayOutput;
  /** Chunks that came while a step's promise was pending (a paused source rarely sends any). */
  readonly #queued: Buffer[] = [];
  #waiting = false;
  #wanted = true;
  #sourceEnded = false;
  #done = false;

  constructor(source: Readable, step: RelayStep, failure: RelayFailure, out: RelayOutput) {
    this.#source = source;
    this.#step = step;
    this.#failure = failure;
    this.#out = out;
    source.on('data', this.#onData);
    source.on('end', this.#onEnd);
    // Never removed: a source that fails after the relay is done must not crash the process.
    source.on('error', this.#onError);
  }

  /** The output wants more (a Readable's _read, a response's 'drain'). */
  resume(): void {
    this.#wanted = true;
    if (!this.#waiting && !this.#done) this.#source.resume();
  }

  /**
   * Relays the source's first buffered chunk now instead of on the next tick, when the
   * stream starts flowing (a stream's attempt settles once its first bytes are buffered).
   * A Readable's read() hands that chunk to the 'data' listener at once.
   */
  readBuffered(): void {
    if (!this.#done && !this.#waiting && this.#source.readableLength > 0) this.#source.read();
  }

  /** Reads no more from the source (its error listener stays). */
  stop(): void {
    if (this.#done) return;
    this.#done = true;
    this.#queued.length = 0;
    this.#source.off('data', this.#onData);
    this.#source.off('end', this.#onEnd);
    this.#source.pause();
  }

  readonly #onData = (chunk: Buffer): void => {
    if (this.#done) return;
    if (this.#waiting) this.#queued.push(chunk);
    else this.#take(chunk);
  };

  readonly #onEnd = (): void => {
    this.#sourceEnded = true;
    if (!this.#waiting && !this.#done) this.#end();
  };

  readonly #onError = (error: Error): void => {
    this.#fail(error);
  };

  #take(chunk: Buffer): void {
    let out: string | Buffer | Promise<string>;
    try {
      out = this.#step.chunk(chunk);
    } catch (error) {
      this.#fail(error as Error);
      return;
    }
    if (out instanceof Promise) this.#wait(out, false);
    else this.#emit(out);
  }

  #emit(out: string | Buffer): void {
    if (out.length > 0 && !this.#out.push(out)) {
      // The client is behind: the source waits for resume().
      this.#wanted = false;
      this.#source.pause();
    }
  }

  /** A stage waits: nothing more is read until it settles, then the queued chunks go in order. */
  #wait(out: Promise<string>, last: boolean): void {
    this.#waiting = true;
    this.#source.pause();
    out.then(
      (text) => {
        this.#waiting = false;
        if (this.#done) return;
        if (last) {
          this.#close(text);
          return;
        }
        this.#emit(text);
        while (!this.#waiting && !this.#done && this.#queued.length > 0) {
          const chunk = this.#queued.shift() as Buffer;
          this.#take(chunk);
        }
        if (this.#waiting || this.#done) return;
        if (this.#sourceEnded) this.#end();
        else if (this.#wanted) this.#source.resume();
      },
      (error: unknown) => {
        this.#waiting = false;
        this.#fail(error as Error);
      },
    );
  }

  #end(): void {
    let out: string | Promise<string>;
    try {
      out = this.#step.end();
    } catch (error) {
      this.#fail(error as Error);
      return;
    }
    if (typeof out === 'string') this.#close(out);
    else this.#wait(out, true);
  }

  #close(text: string): void {
    this.stop();
    if (text.length > 0) this.#out.push(text);
    this.#out.push(null);
  }

  #fail(error: Error): void {
    if (this.#done) return;
    const last = this.#failure(error);
    if (last === undefined) {
      this.stop();
      this.#out.destroy(error);
    } else this.#close(last);
  }
}

/** The relay as a stream, for reply.send and for readers (a held answer). */
export class FrameRelay extends Readable {
  readonly #core: RelayCore;

  constructor(source: Readable, step: RelayStep, failure: RelayFailure) {
    super();
    this.#core = new RelayCore(source, step, failure, this);
  }

  override _read(): void {
    this.#core.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#core.stop();
    callback(error);
  }
}
