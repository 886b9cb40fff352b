// Sends bytes exactly as given (fetch would normalise the request line) and returns the whole
// answer as text, for the security tests that spell requests as an attacker would.
import { connect } from 'node:net';

export function sendRaw(origin: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.end(bytes);
  });
}

/** The status code of a raw answer, or NaN when there is no status line. */
export function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
}
