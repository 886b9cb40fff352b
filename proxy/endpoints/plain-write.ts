import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { FrameRelay, RelayCore, type RelayFailure, type RelayStep } from '../streams/frame-relay.ts';

// A plain answer written straight to the response: the same writeHead(status, headers) and
// end(bytes) reply.send ends with, without its generic path (content-type parse, onSend
// runner, payload type checks): ≈ 1 µs of main-thread CPU per answer (docs/performance.md).
// A streamed answer likewise: the relay writes its pieces into the response (sendRelayed).
// Taken only where reply.send would do exactly that: no onSend hook on the route (the
// exchange capture adds one), no trailers, HTTP/1, a JSON content-type reply.send leaves
// as it is. Otherwise — or on a Fastify whose internals are not found — reply.send does it.

/** Content types reply.send passes through unchanged for the payloads written here. */
const KEPT_CONTENT_TYPES = new Set(['application/json', 'application/json; charset=utf-8']);

interface Internals {
  readonly headers: symbol;
  readonly trailers: symbol;
  readonly context: symbol;
}

let internals: Internals | null | undefined;

function internalsOf(reply: FastifyReply): Internals | null {
  const own = (target: object, description: string): symbol | undefined => Object.getOwnPropertySymbols(target).find((symbol) => symbol.description === description);
  const headers = own(reply, 'fastify.reply.headers');
  const trailers = own(reply, 'fastify.reply.trailers');
  const context = own(reply.request, 'fastify.context');
  return headers === undefined || trailers === undefined || context === undefined ? null : { headers, trailers, context };
}

/**
 * The reply's header fields when it may be written straight to the response as reply.send
 * would (no onSend hook, no trailers, HTTP/1, not HEAD, a status with a body, not sent yet);
 * undefined otherwise, or on a Fastify whose internals are not found.
 */
function directHeaders(reply: FastifyReply): Record<string, string | string[] | number> | undefined {
  internals ??= internalsOf(reply);
  if (internals === null) return undefined;
  const fields = reply as unknown as Record<symbol, unknown>;
  const context = (reply.request as unknown as Record<symbol, { onSend?: unknown } | undefined>)[internals.context];
  const status = reply.raw.statusCode;
  if (
    context?.onSend !== null ||
    fields[internals.trailers] !== null ||
    reply.sent ||
    reply.request.raw.httpVersionMajor !== 1 ||
    reply.request.raw.method === 'HEAD' ||
    // As reply.send: no body and no length on 1xx and 204.
    status < 200 ||
    status === 204
  ) {
    return undefined;
  }
  return fields[internals.headers] as Record<string, string | string[] | number>;
}

/**
 * Sends `out` (the whole answer) with the reply's status and headers, as reply.send would
 * put them on the wire, byte for byte; reply.send itself where that is not certain.
 */
export function sendPlain(reply: FastifyReply, out: Buffer | string): FastifyReply {
  const headers = directHeaders(reply);
  if (headers === undefined) return reply.send(out);
  const type = headers['content-type'];
  if (typeof type !== 'string' || !KEPT_CONTENT_TYPES.has(type) || (typeof out === 'string' && type !== 'application/json; charset=utf-8')) {
    return reply.send(out);
  }
  const raw = reply.raw;
  const length = typeof out === 'string' ? Buffer.byteLength(out) : out.length;
  const stated = headers['content-length'];
  if (!stated || Number(stated) !== length) headers['content-length'] = `${length}`;
  raw.writeHead(raw.statusCode, headers as Record<string, string | string[]>);
  // end(payload) corks the socket: head and body leave in one write.
  raw.end(out);
  return reply;
}

/**
 * A streamed answer relayed straight into the response: the head goes with its first piece,
 * as reply.send(stream) puts it on the wire, without a Readable between the relay and the
 * socket, Fastify's stream plumbing (two end-of-stream watchers, a pipe) and a header-by-
 * header copy. A failure before the first piece is answered as reply.send would (the error
 * handler's answer); after it, the response is cut. reply.send(stream) where a hook must see
 * the answer or the reply is not plain HTTP/1.
 */
export function sendRelayed(reply: FastifyReply, source: Readable, step: RelayStep, failure: RelayFailure): FastifyReply {
  const headers = directHeaders(reply);
  if (headers === undefined) return reply.send(new FrameRelay(source, step, failure));
  const raw = reply.raw;
  let started = false;
  let refused = false;
  const core: RelayCore = new RelayCore(source, step, failure, {
    push(out) {
      if (refused) return false;
      if (!started) {
        try {
          raw.writeHead(raw.statusCode, headers as Record<string, string | string[]>);
        } catch (error) {
          // A header Node will not write (a relayed value it finds invalid): answered as
          // reply.send answers a throw, never thrown into the source's 'data' event.
          refused = true;
          core.stop();
          source.destroy();
          reply.send(error as Error);
          return false;
        }
        started = true;
      }
      if (out !== null) return raw.write(out);
      raw.end();
      return false;
    },
    destroy(error) {
      if (started || raw.destroyed) raw.destroy(error);
      else reply.send(error);
    },
  });
  raw.on('drain', () => core.resume());
  // The client left: nothing more is read (the upstream call is aborted by its own listener).
  raw.on('close', () => {
    if (!raw.writableFinished) core.stop();
  });
  core.readBuffered();
  return reply;
}
