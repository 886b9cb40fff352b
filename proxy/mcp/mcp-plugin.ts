import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { PUBLIC_ROUTE } from '../auth/route-access.ts';
import { GatewayError, isGatewayError } from '../errors.ts';
import type { McpGateway, McpGatewayDeps } from './mcp-gateway.ts';

// The MCP endpoint's routes (docs/mcp.md). This module is light: the SDK, jose and the
// gateway logic load on the first /mcp request, so a gateway without MCP servers loads
// and pays nothing for them.
//
//   POST|GET|DELETE /mcp            every server the caller may use (names prefixed)
//   POST|GET|DELETE /mcp/:server    one server (its own names)
//   GET /.well-known/oauth-protected-resource[/mcp[/:server]]   RFC 9728 metadata (public)

/** A body the JSON parser could not read: answered as a JSON-RPC parse error, not a 400 in the OpenAI shape. */
export class JsonParseFailure {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

/**
 * A 2026-07-28 request refused on its headers alone, before its body is parsed: no Mcp-Method,
 * or a method the gateway does not serve statelessly. The body is never trusted over them:
 * what is not refused here is checked against the body (mcp-stateless.ts).
 */
export class HeaderRefusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  constructor(status: number, code: number, message: string) {
    this.status = status;
    this.code = code;
    this.message = message;
  }
}

/** Kept in step with mcp-stateless.ts MODERN_METHODS (this module loads no SDK code). */
const SERVED_STATELESS = new Set(['server/discover', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list', 'resources/templates/list', 'resources/read']);

function refusalOf(request: FastifyRequest): HeaderRefusal | undefined {
  if (request.headers['mcp-protocol-version'] !== '2026-07-28') return undefined;
  const method = request.headers['mcp-method'];
  if (typeof method !== 'string' || method === '') return new HeaderRefusal(400, -32020, 'Header mismatch: the Mcp-Method header is required.');
  if (!SERVED_STATELESS.has(method) && !method.startsWith('notifications/')) return new HeaderRefusal(404, -32601, 'Method not found');
  return undefined;
}

const MCP_ROUTE = { config: { gatewayScope: 'inference', oauthBearer: true } } as const;

export function mcpPlugin(deps: McpGatewayDeps): FastifyPluginAsync {
  return async (app) => {
    let loaded: Promise<McpGateway> | undefined;
    const gateway = (): Promise<McpGateway> => (loaded ??= import('./mcp-gateway.ts').then((module) => new module.McpGateway(deps)));
    app.addHook('onClose', async () => {
      if (loaded !== undefined) await (await loaded).close();
    });

    // In this plugin only: malformed JSON is a JSON-RPC parse error (-32700), and a message
    // past the state's cap a bounded refusal; the gateway's body limit caps what is read.
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      const raw = body as Buffer;
      const limit = request.gateway.state.document.mcp?.maxMessageBytes ?? 4 * 1024 * 1024;
      if (raw.length > limit) {
        done(new GatewayError('AIGW_ERR_BODY_TOO_LARGE', `An MCP message may be at most ${limit} bytes.`), undefined);
        return;
      }
      const refusal = refusalOf(request);
      if (refusal !== undefined) {
        done(null, refusal);
        return;
      }
      try {
        done(null, JSON.parse(raw.toString('utf8')));
      } catch (error) {
        done(null, new JsonParseFailure((error as Error).message.slice(0, 200)));
      }
    });

    // 401s point MCP clients at the protected-resource metadata (RFC 9728 §5.1). Every 401 is
    // an error the error handler answers; an onError hook (not onSend) leaves answers alone.
    app.addHook('onError', (request, reply, error, done) => {
      const status = isGatewayError(error) ? error.status : (error as { statusCode?: unknown }).statusCode;
      if (status === 401 && request.gateway?.state.document.mcp?.oauth !== undefined) {
        reply.header('www-authenticate', `Bearer resource_metadata="${metadataUrl(request)}"`);
      }
      done();
    });

    const scopeOf = (request: FastifyRequest): string | undefined => (request.params as { server?: string }).server;
    for (const url of ['/mcp', '/mcp/:server']) {
      app.post(url, MCP_ROUTE, async (request, reply) => (await gateway()).post(request, reply, scopeOf(request)));
      app.get(url, MCP_ROUTE, async (request, reply) => (await gateway()).get(request, reply, scopeOf(request)));
      app.delete(url, MCP_ROUTE, async (request, reply) => (await gateway()).delete(request, reply, scopeOf(request)));
    }

    const metadata = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const oauth = deps.currentState().document.mcp?.oauth;
      if (oauth === undefined) throw new GatewayError('AIGW_ERR_NOT_FOUND', 'This gateway takes no OAuth tokens on /mcp (mcp.oauth is not configured).');
      const { protectedResourceMetadata } = await import('./mcp-oauth.ts');
      return reply.header('cache-control', 'max-age=300').send(protectedResourceMetadata(oauth));
    };
    for (const url of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource/mcp/:server']) {
      app.get(url, PUBLIC_ROUTE, metadata);
    }
  };
}

function metadataUrl(request: FastifyRequest): string {
  const host = typeof request.headers.host === 'string' && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(request.headers.host) ? request.headers.host : 'localhost';
  const asked = request.url.split('?')[0] ?? '';
  const path = /^\/mcp(?:\/[a-z0-9-]{1,63})?$/.test(asked) ? asked : '/mcp';
  return `${request.protocol}://${host}/.well-known/oauth-protected-resource${path}`;
}
