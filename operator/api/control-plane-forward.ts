import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Agent, request, type Dispatcher } from 'undici';
import { GatewayError } from '../../proxy/errors.ts';

// The proxy's side of the control plane in a cluster: /v1/prompts/* and /v1/policies/* are
// forwarded to the operator's control-plane Service, so users keep one base URL. The proxy
// has already authenticated the gateway API key (its onRequest hook); the control plane
// checks it again, with scopes. The answer is streamed back as it comes; when the control
// plane cannot be reached the client gets an OpenAI-shaped 502.

export interface ControlPlaneForwardOptions {
  /** Base URL of the control-plane API, e.g. http://aigateway-operator.aigw.svc:8080 */
  readonly baseUrl: string;
  /** Bound on the time to the control plane's response headers (ms). */
  readonly timeoutMs?: number;
  readonly dispatcher?: Dispatcher;
}

export const FORWARDED_PREFIXES = ['/v1/prompts/', '/v1/policies/'] as const;

const REQUEST_HEADERS = ['content-type', 'accept', 'x-gateway-api-key', 'x-gateway-metadata'] as const;
const SKIPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer', 'x-gateway-trace-id']);

/**
 * A Fastify plugin forwarding the control-plane routes.
 *
 * @example app.register(controlPlaneForward({ baseUrl: 'http://aigateway-operator:8080' }));
 */
export function controlPlaneForward(options: ControlPlaneForwardOptions): FastifyPluginAsync {
  const base = new URL(options.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 32 });
  const timeout = options.timeoutMs ?? 30_000;

  return async (app) => {
    if (options.dispatcher === undefined) app.addHook('onClose', async () => dispatcher.close());
    const handler = async (incoming: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const url = `${base.origin}${basePath}${incoming.url}`;
      const headers: Record<string, string> = {};
      for (const name of REQUEST_HEADERS) {
        const value = incoming.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const traceId = incoming.gateway?.traceId;
      if (traceId !== undefined) headers['x-gateway-trace-id'] = traceId;
      const body = incoming.rawBody ?? (incoming.body === undefined || incoming.body === null ? undefined : JSON.stringify(incoming.body));
      const abort = new AbortController();
      // The response's close (not the request's: that fires once its body is read).
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      let upstream: Dispatcher.ResponseData;
      try {
        upstream = await request(url, {
          method: incoming.method as Dispatcher.HttpMethod,
          headers,
          body,
          dispatcher,
          signal: abort.signal,
          headersTimeout: timeout,
          bodyTimeout: timeout,
        });
      } catch (error) {
        const code = (error as { code?: string }).code ?? (error as Error).name;
        throw new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `The control plane (${base.origin}) is unreachable: ${code}.`, { cause: error });
      }
      reply.code(upstream.statusCode);
      for (const [name, value] of Object.entries(upstream.headers)) {
        if (value !== undefined && !SKIPPED_RESPONSE_HEADERS.has(name.toLowerCase())) reply.header(name, value);
      }
      return reply.send(upstream.body);
    };
    for (const prefix of FORWARDED_PREFIXES) {
      app.route({
        method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
        url: `${prefix}*`,
        // Any valid gateway key passes here; the control plane enforces scopes.
        config: { gatewayScope: undefined },
        handler,
      });
    }
  };
}
