import type { FastifyReply } from 'fastify';

// A plain answer written straight to the response: the same writeHead(status, headers) and
// end(bytes) reply.send ends with, without its generic path (content-type parse, onSend
// runner, payload type checks): ≈ 1 µs of main-thread CPU per answer (docs/performance.md).
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
 * Sends `out` (the whole answer) with the reply's status and headers, as reply.send would
 * put them on the wire, byte for byte; reply.send itself where that is not certain.
 */
export function sendPlain(reply: FastifyReply, out: Buffer | string): FastifyReply {
  internals ??= internalsOf(reply);
  if (internals === null) return reply.send(out);
  const fields = reply as unknown as Record<symbol, unknown>;
  const headers = fields[internals.headers] as Record<string, string | string[] | number>;
  const context = (reply.request as unknown as Record<symbol, { onSend?: unknown } | undefined>)[internals.context];
  const type = headers['content-type'];
  if (
    context?.onSend !== null ||
    fields[internals.trailers] !== null ||
    reply.sent ||
    reply.request.raw.httpVersionMajor !== 1 ||
    reply.request.raw.method === 'HEAD' ||
    typeof type !== 'string' ||
    !KEPT_CONTENT_TYPES.has(type) ||
    (typeof out === 'string' && type !== 'application/json; charset=utf-8')
  ) {
    return reply.send(out);
  }
  const raw = reply.raw;
  const status = raw.statusCode;
  // As reply.send: no body and no length on 1xx and 204.
  if (status < 200 || status === 204) return reply.send(out);
  const length = typeof out === 'string' ? Buffer.byteLength(out) : out.length;
  const stated = headers['content-length'];
  if (!stated || Number(stated) !== length) headers['content-length'] = `${length}`;
  raw.writeHead(status, headers as Record<string, string | string[]>);
  // end(payload) corks the socket: head and body leave in one write.
  raw.end(out);
  return reply;
}
