import { connect } from 'node:net';

/** An answer read off a raw socket: its head as sent (up to its last CRLF) and its body, the Date line masked. */
export interface RawAnswer {
  readonly head: string;
  readonly body: string;
  /** Head, blank line and body, as on the wire. */
  readonly raw: string;
}

/**
 * Writes `request` (a whole HTTP/1.1 request) on a new socket to 127.0.0.1:`port` and reads one
 * answer: up to its content-length, to the last chunk when chunked, else the head alone.
 */
export function rawExchange(port: number, request: string): Promise<RawAnswer> {
  const socket = connect(port, '127.0.0.1');
  socket.write(request);
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = text.slice(0, end + 2);
      const rest = text.slice(end + 4);
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(head);
      const whole =
        length !== null ? Buffer.byteLength(rest, 'latin1') >= Number(length[1]) : /\r\ntransfer-encoding: chunked\r\n/i.test(head) ? rest.endsWith('0\r\n\r\n') : true;
      if (!whole) return;
      socket.destroy();
      const masked = head.replace(/\r\nDate: [^\r]+/, '\r\nDate: <date>');
      resolve({ head: masked, body: Buffer.from(rest, 'latin1').toString('utf8'), raw: `${masked}\r\n${rest}` });
    });
  });
}
