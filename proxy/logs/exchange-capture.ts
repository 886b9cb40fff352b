import { Transform, type Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { attachExchange, type CapturedBody, type RequestExchange } from '../observability/request-exchange.ts';

// Keeping request headers and bodies for the request log's detail view (docs/console.md),
// only when `serve --log-bodies` asks for it. Headers are kept with every credential-looking
// value replaced (authorization, cookies, API keys, tokens, x-*-key…); each body up to a cap
// (32 KiB by default) with its real size and a truncated flag. A streamed answer is copied as
// it is relayed, never held back. Off, this plugin is not registered and costs nothing.

export const DEFAULT_EXCHANGE_BODY_BYTES = 32 * 1024;
export const REDACTED = '[redacted]';

// Names whose values are credentials, whatever the provider calls them.
const SECRET_HEADER = /(authorization|cookie|api[-_]?key|token|secret|password|credential|signature|session|^x-.*-key$|^x-amz-security|^x-goog-)/i;
const SECRET_IN_CONFIG = /(api_?key|secret|password|token|credential|authorization|private_?key|access_?key|service_?account|virtual_?key)/i;
const MAX_HEADERS = 100;
const MAX_HEADER_VALUE = 1_024;
// Reads of the log and the configuration are never logged, so never captured either.
const NOT_CAPTURED = /^\/v1\/(logs|analytics|configuration)(\/|$)/;

/** Header name → value with credentials replaced; bounded in count and length. Pure. */
export function redactHeaders(headers: Readonly<Record<string, unknown>>): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (++count > MAX_HEADERS) break;
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    // An inline x-gateway-config may carry provider keys: kept only when it names none.
    const secret = SECRET_HEADER.test(name) || (name.toLowerCase() === 'x-gateway-config' && SECRET_IN_CONFIG.test(text));
    out[name.toLowerCase()] = secret ? REDACTED : text.length > MAX_HEADER_VALUE ? `${text.slice(0, MAX_HEADER_VALUE)}…` : text;
  }
  return out;
}

/** The first `cap` bytes of a body as text, with its whole size. Pure. */
export function captureBody(body: Buffer | string, cap: number): CapturedBody {
  const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  if (bytes <= cap) return { text: typeof body === 'string' ? body : body.toString('utf8'), bytes, truncated: false };
  const head = typeof body === 'string' ? Buffer.from(body).subarray(0, cap) : body.subarray(0, cap);
  return { text: head.toString('utf8'), bytes, truncated: true };
}

/**
 * The capture hooks, registered at the server's root (they see every route).
 *
 * @example startGateway({ …, plugins: [() => exchangeCapturePlugin({ maxBodyBytes: 32_768 })] });
 */
export function exchangeCapturePlugin(options: { maxBodyBytes?: number } = {}): FastifyPluginAsync {
  const cap = options.maxBodyBytes ?? DEFAULT_EXCHANGE_BODY_BYTES;
  const plugin: FastifyPluginAsync = async (app) => {
    app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      const route = request.routeOptions.url;
      const context = request.gateway as object | null | undefined;
      if (context === null || context === undefined || route === undefined || !route.startsWith('/v1/') || NOT_CAPTURED.test(route)) return payload;
      const raw = request.rawBody;
      const exchange: RequestExchange = {
        requestHeaders: redactHeaders(request.headers),
        requestBody: raw === undefined ? undefined : captureBody(raw, cap),
        responseHeaders: redactHeaders(reply.getHeaders()),
        responseBody: undefined,
      };
      attachExchange(context, exchange);
      if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
        exchange.responseBody = captureBody(payload, cap);
        return payload;
      }
      if (isReadable(payload)) return teeStream(payload, cap, exchange);
      return payload;
    });
  };
  // Root-level, like fastify-plugin: the hook applies to every route, not only this plugin's.
  (plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
  return plugin;
}

/** The answer stream unchanged, its first `cap` bytes copied into the exchange as they pass. */
function teeStream(source: Readable, cap: number, exchange: RequestExchange): Readable {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let seen = 0;
  // Read when the record is made, which may be before the stream ends (a client that left).
  Object.defineProperty(exchange, 'responseBody', {
    enumerable: true,
    get: (): CapturedBody => ({ text: Buffer.concat(kept).toString('utf8'), bytes: seen, truncated: seen > keptBytes }),
  });
  const tee = new Transform({
    transform(chunk: Buffer | string, _encoding, done) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      seen += bytes.length;
      if (keptBytes < cap) {
        const part = Buffer.from(bytes.subarray(0, cap - keptBytes));
        kept.push(part);
        keptBytes += part.length;
      }
      done(null, chunk);
    },
  });
  source.once('error', (error) => tee.destroy(error));
  // The relay's own teardown (upstream abort) runs when its stream is destroyed.
  tee.once('close', () => {
    if (!source.destroyed) source.destroy();
  });
  return source.pipe(tee);
}

function isReadable(value: unknown): value is Readable {
  return typeof value === 'object' && value !== null && typeof (value as Readable).pipe === 'function' && typeof (value as Readable).on === 'function';
}
