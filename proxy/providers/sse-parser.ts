// Incremental server-sent-events parser (WHATWG framing): feed it bytes as they arrive and
// it returns complete events. Tolerates CRLF/CR line ends, comment lines (keep-alives),
// events without data, and frames split anywhere across TCP chunks.

export interface SseEvent {
  /** The `event:` field, or undefined for the default `message` event. */
  readonly event: string | undefined;
  /** The `data:` lines joined with "\n". */
  readonly data: string;
  readonly id: string | undefined;
}

export class SseParser {
  #buffer = '';
  #decoder = new TextDecoder();
  #event: string | undefined;
  #data: string[] = [];
  #id: string | undefined;

  /** Parses a chunk; returns the events it completed. */
  push(chunk: Buffer | Uint8Array | string): SseEvent[] {
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const lf = this.#buffer.indexOf('\n', start);
      const cr = this.#buffer.indexOf('\r', start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A CR at the end of the buffer may be the first half of CRLF: wait for more.
        if (cr === this.#buffer.length - 1) break;
        end = cr;
        next = this.#buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      this.#line(this.#buffer.slice(start, end), events);
      start = next;
    }
    this.#buffer = this.#buffer.slice(start);
    return events;
  }

  /** Flushes a final event that was not followed by a blank line. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.#buffer !== '') this.#line(this.#buffer, events);
    this.#buffer = '';
    this.#line('', events);
    return events;
  }

  #line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0 || this.#event !== undefined) {
        events.push({ event: this.#event, data: this.#data.join('\n'), id: this.#id });
      }
      this.#event = undefined;
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id') this.#id = value;
  }
}

/** One OpenAI-style SSE frame. */
export function sseFrame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export const SSE_DONE = 'data: [DONE]\n\n';
