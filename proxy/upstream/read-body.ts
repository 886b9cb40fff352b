import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';

// Reading an upstream body whole, bounded — shared by every place that must (plain
// answers, error bodies, forwarded control calls).

type Body = Dispatcher.ResponseData['body'];

/** The whole body; past `limit` bytes it is destroyed and a 502 gateway error is thrown. */
export async function readBodyBytes(body: Body, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      body.destroy();
      throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `The provider's answer is larger than ${limit} bytes.`);
    }
    chunks.push(buffer);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}

/** The first `limit` bytes as text (an error message needs no more); the rest is dropped. */
export async function readBodyText(body: Body, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      body.destroy();
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
