import { createHash, randomUUID } from 'node:crypto';
import { ErrorCode, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Dispatcher } from 'undici';
import { authenticateApiKey } from '../auth/api-key-auth.ts';
import type { BudgetEnforcer } from '../budgets/budget-enforcer.ts';
import type { UsageLimitPolicy } from '../budgets/usage-limit-schema.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { GatewayError } from '../errors.ts';
import type { RequestRecordSink } from '../observability/request-record.ts';
import type { RateLimitPolicy } from '../ratelimit/policy-schema.ts';
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';
import { McpAccounting } from './mcp-accounting.ts';
import { McpCalls, type CallContext } from './mcp-calls.ts';
import { mcpCatalog, type McpCatalog, type McpPrincipal, type McpServer } from './mcp-catalog.ts';
import { answerDirect, directRequestOf } from './mcp-direct.ts';
import { isObject, MCP_ERROR, rpcErrorReply, RpcError } from './mcp-errors.ts';
import type { MethodHost } from './mcp-methods.ts';
import { looksLikeJwt, verifyBearer } from './mcp-oauth.ts';
import { HeaderRefusal, JsonParseFailure } from './mcp-plugin.ts';
import { answerWithSdkServer } from './mcp-sdk-server.ts';
import { McpSessionSeal, type McpSession } from './mcp-session.ts';
import { checkMirroredHeaders, checkModernVersion, isModern, MODERN_METHODS, MODERN_VERSION } from './mcp-stateless.ts';
import { McpUpstreams, type ClientHeaders } from './mcp-upstream.ts';

// The gateway's MCP endpoint: who is calling, which server scope, which gateway session. The
// gateway session is the sealed id (mcp-session.ts): each request opens it, checks it belongs
// to the caller and talks to the upstream sessions inside it (mcp-calls.ts). A single request
// of a gateway method is answered directly (mcp-direct.ts); initialize, batches and the rest
// by the official SDK server (mcp-sdk-server.ts). 2026-07-28 requests are sessionless.

export interface McpGatewayDeps {
  currentState(): GatewayState;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly dispatcher: Dispatcher;
  readonly requestSink: RequestRecordSink | undefined;
  readonly rateLimiter: RateLimiter | undefined;
  dynamicPolicies(): Iterable<RateLimitPolicy>;
  /** Usage-limit enforcement (priced tool calls are charged); undefined when none is wired. */
  readonly budgets?: BudgetEnforcer | undefined;
  /** Usage-limit policies created through the API. */
  readonly dynamicUsageLimits?: (() => readonly UsageLimitPolicy[]) | undefined;
  /** AIGATEWAY_SECRET_KEY; without it a random per-process key (one replica only). */
  readonly secretKey: string | undefined;
  readonly now?: () => number;
}

export { MCP_ERROR, RpcError, rpcErrorReply };

const MAX_OPENED_SESSIONS = 10_000;

export class McpGateway {
  readonly #deps: McpGatewayDeps;
  readonly #seal: McpSessionSeal;
  readonly upstreams: McpUpstreams;
  readonly #host: MethodHost;
  /** Opened ids with their key for re-established upstream sessions (bounded): a session's every request need not decrypt again. */
  readonly #opened = new Map<string, { session: McpSession; key: string }>();
  #retained: McpCatalog | undefined;

  constructor(deps: McpGatewayDeps) {
    this.#deps = deps;
    if (deps.secretKey === undefined) {
      deps.logger.warn('AIGATEWAY_SECRET_KEY is not set: MCP sessions are sealed with a per-process key and do not survive a restart or move between replicas');
    }
    this.#seal = new McpSessionSeal(deps.secretKey ?? randomUUID() + randomUUID());
    this.upstreams = new McpUpstreams({
      dispatcher: deps.dispatcher,
      logger: deps.logger,
      maxUpstreamBytes: () => mcpCatalog(deps.currentState()).settings.maxUpstreamBytes,
    });
    this.#host = {
      calls: new McpCalls(this.upstreams, deps.logger, () => this.#now()),
      accounting: new McpAccounting(deps.registry, deps.requestSink, deps.logger),
      rateLimiter: deps.rateLimiter,
      dynamicPolicies: () => deps.dynamicPolicies(),
      budgets: deps.budgets,
      dynamicUsageLimits: () => deps.dynamicUsageLimits?.() ?? [],
      dispatcher: deps.dispatcher,
    };
  }

  async close(): Promise<void> {
    await this.upstreams.close();
  }

  /** POST /mcp and /mcp/{server}. */
  async post(request: FastifyRequest, reply: FastifyReply, scopeName: string | undefined): Promise<FastifyReply> {
    const catalog = this.#catalogOf(request.gateway.state);
    const principal = await this.#principalOf(request, catalog);
    const scope = this.#scopeOf(catalog, principal, scopeName);
    const body = request.body;
    if (body instanceof JsonParseFailure) return rpcErrorReply(reply, 400, ErrorCode.ParseError, `Parse error: ${body.message}`);
    if (body instanceof HeaderRefusal) return rpcErrorReply(reply, body.status, body.code, body.message);
    const route = scopeName === undefined ? '/mcp' : '/mcp/:server';
    if (isModern(request, body)) return this.#postModern(request, reply, body, { catalog, principal, scope, route });
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    if (messages.length === 0) return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: an empty batch.');
    if (messages.length > catalog.settings.maxBatch) {
      return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, `Invalid Request: a batch holds at most ${catalog.settings.maxBatch} messages.`);
    }
    try {
      checkMirroredHeaders(request, body, false);
    } catch (error) {
      return rpcErrorReply(reply, 400, (error as RpcError).code, (error as RpcError).message, idOf(body));
    }
    const initialize = messages === body ? messages.find(isInitialize) : isInitialize(body) ? body : undefined;
    const clientHeaders = clientHeadersOf(request);
    let session: McpSession;
    let sessionId: string;
    let sessionKey: string;
    if (initialize !== undefined) {
      if (messages.length > 1) return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: initialize must be sent alone.');
      const params = (initialize as { params?: { protocolVersion?: unknown } }).params;
      const requested = typeof params?.protocolVersion === 'string' ? params.protocolVersion : LATEST_PROTOCOL_VERSION;
      session = await this.#host.calls.openSession(catalog, principal, scope, requested, clientHeaders);
      sessionId = this.#seal.seal(session);
      sessionKey = keyOf(sessionId);
    } else {
      const presented = request.headers['mcp-session-id'];
      if (typeof presented !== 'string' || presented === '') {
        return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required (send initialize first).');
      }
      const opened = this.#openPresented(presented, principal, scopeName);
      if (opened === undefined) return rpcErrorReply(reply, 404, MCP_ERROR.sessionNotFound, 'Session not found: start a new session with initialize.');
      ({ session, key: sessionKey } = opened);
      sessionId = presented;
    }
    const context: CallContext = { request, catalog, principal, session, sessionKey, scope, clientHeaders, route, modern: false };
    const direct = initialize === undefined ? directRequestOf(request, body) : undefined;
    if (direct !== undefined) return answerDirect(this.#host, context, reply, direct, sessionId);
    return answerWithSdkServer(this.#host, context, request, reply, body, sessionId);
  }

  /** A 2026-07-28 request: no session; the caller's upstream sessions are this replica's own. */
  async #postModern(
    request: FastifyRequest,
    reply: FastifyReply,
    body: unknown,
    base: { catalog: McpCatalog; principal: McpPrincipal; scope: McpServer | undefined; route: string },
  ): Promise<FastifyReply> {
    try {
      checkModernVersion(request, body);
      checkMirroredHeaders(request, body, true);
    } catch (error) {
      const failure = error as RpcError;
      return rpcErrorReply(reply, 400, failure.code, failure.message, idOf(body), failure.data);
    }
    const message = body as Record<string, unknown>;
    const method = message['method'];
    if (message['jsonrpc'] !== '2.0' || typeof method !== 'string') return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message.', idOf(body));
    // Notifications: accepted and dropped (the revision defines none a client sends over HTTP).
    if (!('id' in message)) return reply.code(202).send('');
    const id = message['id'];
    if (typeof id !== 'string' && typeof id !== 'number') return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: id must be a string or a number.');
    if (!MODERN_METHODS.has(method)) return rpcErrorReply(reply, 404, ErrorCode.MethodNotFound, 'Method not found', id);
    const session: McpSession = { principal: base.principal.id, scope: base.scope?.name, version: MODERN_VERSION, upstreams: {}, expiresAt: Number.POSITIVE_INFINITY };
    const context: CallContext = { ...base, request, session, sessionKey: `modern\u0000${base.principal.id}`, clientHeaders: clientHeadersOf(request), modern: true };
    return answerDirect(this.#host, context, reply, { id, method, params: message['params'] }, undefined);
  }

  /** DELETE: ends the upstream sessions (the sealed id then finds none of them). */
  async delete(request: FastifyRequest, reply: FastifyReply, scopeName: string | undefined): Promise<FastifyReply> {
    const catalog = this.#catalogOf(request.gateway.state);
    const principal = await this.#principalOf(request, catalog);
    this.#scopeOf(catalog, principal, scopeName);
    const presented = request.headers['mcp-session-id'];
    if (typeof presented !== 'string') return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required.');
    const session = this.#openPresented(presented, principal, scopeName)?.session;
    if (session === undefined) return rpcErrorReply(reply, 404, MCP_ERROR.sessionNotFound, 'Session not found.');
    const clientHeaders = clientHeadersOf(request);
    await Promise.allSettled(
      Object.entries(session.upstreams).map(async ([name, upstream]) => {
        const server = catalog.servers.get(name);
        if (server !== undefined) await this.upstreams.terminate(server, upstream, clientHeaders);
      }),
    );
    return reply.code(200).send('');
  }

  /** GET: the session's notification stream (list_changed of its upstreams). */
  async get(request: FastifyRequest, reply: FastifyReply, scopeName: string | undefined): Promise<FastifyReply> {
    const catalog = this.#catalogOf(request.gateway.state);
    const principal = await this.#principalOf(request, catalog);
    this.#scopeOf(catalog, principal, scopeName);
    const accept = request.headers.accept ?? '';
    if (!accept.includes('text/event-stream')) return rpcErrorReply(reply, 406, ErrorCode.InvalidRequest, 'Not Acceptable: Client must accept text/event-stream.');
    const presented = request.headers['mcp-session-id'];
    if (typeof presented !== 'string') return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required.');
    const session = this.#openPresented(presented, principal, scopeName)?.session;
    if (session === undefined) return rpcErrorReply(reply, 404, MCP_ERROR.sessionNotFound, 'Session not found.');
    const { openNotificationStream } = await import('./mcp-notifications.ts');
    return openNotificationStream({ gateway: this, request, reply, catalog, session, clientHeaders: clientHeadersOf(request) });
  }

  #catalogOf(state: GatewayState): McpCatalog {
    const catalog = mcpCatalog(state);
    if (this.#retained !== catalog) {
      this.#retained = catalog;
      this.upstreams.retain(catalog.servers);
    }
    return catalog;
  }

  async #principalOf(request: FastifyRequest, catalog: McpCatalog): Promise<McpPrincipal> {
    const key = request.gateway.apiKey;
    if (key !== undefined) return keyPrincipal(key);
    const token = bearerOf(request.headers.authorization);
    const oauth = catalog.settings.oauth;
    if (oauth === undefined || !looksLikeJwt(token)) {
      // Without OAuth a JWT-shaped bearer can only be a gateway key.
      const found = authenticateApiKey(request.gateway.state, token, 'inference', 'authorization');
      delete request.headers.authorization;
      request.gateway.apiKey = found;
      return keyPrincipal(found);
    }
    return verifyBearer(token, oauth, this.#deps.dispatcher);
  }

  #scopeOf(catalog: McpCatalog, principal: McpPrincipal, name: string | undefined): McpServer | undefined {
    if (name === undefined) return undefined;
    const server = catalog.servers.get(name);
    // A server the caller may not use is as unknown as one that does not exist.
    if (server === undefined || !server.admits(principal)) throw new GatewayError('AIGW_ERR_NOT_FOUND', `Unknown MCP server: ${name}`);
    return server;
  }

  #openPresented(presented: string, principal: McpPrincipal, scopeName: string | undefined): { session: McpSession; key: string } | undefined {
    const now = this.#now();
    let opened = this.#opened.get(presented);
    if (opened === undefined || opened.session.expiresAt <= now) {
      const session = this.#seal.open(presented, now);
      opened = session === undefined ? undefined : { session, key: keyOf(presented) };
      if (opened !== undefined) {
        if (this.#opened.size >= MAX_OPENED_SESSIONS) this.#opened.delete(this.#opened.keys().next().value as string);
        this.#opened.set(presented, opened);
      }
    }
    if (opened === undefined || opened.session.principal !== principal.id || opened.session.scope !== scopeName) return undefined;
    return opened;
  }

  #now(): number {
    return (this.#deps.now ?? Date.now)();
  }
}

/** The key of a session's re-established upstream sessions: a hash of its id (the id itself stays out of memory maps' keys). */
function keyOf(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('base64url').slice(0, 22);
}

const isInitialize = (message: unknown): boolean => isObject(message) && message['method'] === 'initialize';

const NO_SCOPES: ReadonlySet<string> = new Set();
/** A key's principal, made once per key record (records are per state snapshot, so a reload makes new ones). */
const keyPrincipals = new WeakMap<object, McpPrincipal>();

function keyPrincipal(key: { readonly id: string; readonly workspace?: string | undefined }): McpPrincipal {
  let principal = keyPrincipals.get(key);
  if (principal === undefined) {
    principal = { id: `key:${key.id}`, kind: 'key', keyId: key.id, workspace: key.workspace, scopes: NO_SCOPES };
    keyPrincipals.set(key, principal);
  }
  return principal;
}

function idOf(body: unknown): unknown {
  const id = isObject(body) ? body['id'] : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function bearerOf(value: string | undefined): string | undefined {
  const match = value === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(value.trim());
  return match?.[1];
}

function clientHeadersOf(request: FastifyRequest): ClientHeaders {
  const authorization = request.headers.authorization;
  return { authorization: typeof authorization === 'string' ? authorization : undefined };
}
