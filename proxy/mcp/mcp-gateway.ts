import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  CompatibilityCallToolResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  LATEST_PROTOCOL_VERSION,
  ListPromptsRequestSchema,
  ListPromptsResultSchema,
  ListResourcesRequestSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesRequestSchema,
  ListResourceTemplatesResultSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  McpError,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  SubscribeRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  UnsubscribeRequestSchema,
  EmptyResultSchema,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Dispatcher } from 'undici';
import { authenticateApiKey } from '../auth/api-key-auth.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { GatewayError, isGatewayError } from '../errors.ts';
import type { RequestRecord, RequestRecordSink } from '../observability/request-record.ts';
import type { RateLimitPolicy } from '../ratelimit/policy-schema.ts';
import type { RequestFacts } from '../ratelimit/policy-matching.ts';
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';
import { mcpCatalog, NAME_SEPARATOR, splitPrefixed, URI_SEPARATOR, type McpCatalog, type McpPrincipal, type McpServer } from './mcp-catalog.ts';
import { looksLikeJwt, verifyBearer } from './mcp-oauth.ts';
import { McpSessionSeal, type McpSession, type UpstreamSession } from './mcp-session.ts';
import { JsonParseFailure } from './mcp-plugin.ts';
import { McpUpstreams, UpstreamFailure, type ClientHeaders } from './mcp-upstream.ts';

// The gateway as an MCP server (the official SDK's Server over its web-standard Streamable
// HTTP transport, one pair per HTTP request, JSON answers). The gateway session is the
// sealed id (mcp-session.ts): each request opens it, checks it belongs to the caller and
// talks to the upstream sessions inside it.

export interface McpGatewayDeps {
  currentState(): GatewayState;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly dispatcher: Dispatcher;
  readonly requestSink: RequestRecordSink | undefined;
  readonly rateLimiter: RateLimiter | undefined;
  dynamicPolicies(): Iterable<RateLimitPolicy>;
  /** AIGATEWAY_SECRET_KEY; without it a random per-process key (one replica only). */
  readonly secretKey: string | undefined;
  readonly now?: () => number;
}

/** JSON-RPC error codes of the gateway (besides the standard ones and the upstream's own). */
export const MCP_ERROR = {
  upstreamUnavailable: -32050,
  upstreamTimeout: -32051,
  upstreamTooLarge: -32052,
  rateLimited: -32029,
  forbidden: -32003,
  sessionNotFound: -32001,
  guardrailDenied: -32004,
} as const;

const NO_SCHEMA_VALIDATOR = {
  getValidator: () => (input: unknown) => ({ valid: true as const, data: input as never, errorMessage: undefined }),
};

/** Pages of one upstream list followed at most (a server that pages forever is cut). */
const MAX_LIST_PAGES = 20;
/** Upstream sessions re-established on this replica (expired or missing in the sealed id). */
const MAX_REPLACED_SESSIONS = 10_000;
const MAX_OPENED_SESSIONS = 10_000;
/** How long a server that failed to initialize is reported unavailable without trying again. */
const INIT_RETRY_MS = 5_000;

interface CallContext {
  readonly request: FastifyRequest;
  readonly catalog: McpCatalog;
  readonly principal: McpPrincipal;
  readonly session: McpSession;
  readonly sessionKey: string;
  readonly scope: McpServer | undefined;
  readonly clientHeaders: ClientHeaders;
  readonly route: string;
}

export class McpGateway {
  readonly #deps: McpGatewayDeps;
  readonly #seal: McpSessionSeal;
  readonly upstreams: McpUpstreams;
  readonly #replaced = new Map<string, UpstreamSession>();
  readonly #opened = new Map<string, McpSession>();
  /** When a server last failed to initialize on this replica (by name; bounded by the configured servers). */
  readonly #failedInit = new Map<string, number>();
  readonly #metrics: { calls: Counter<'server' | 'method' | 'outcome'>; duration: Histogram<'server' | 'method'> };
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
    this.#metrics = metricsOf(deps.registry);
  }

  async close(): Promise<void> {
    await this.upstreams.close();
  }

  /** POST /mcp and /mcp/{server}. */
  async post(request: FastifyRequest, reply: FastifyReply, scopeName: string | undefined): Promise<FastifyReply> {
    const state = request.gateway.state;
    const catalog = this.#catalogOf(state);
    const principal = await this.#principalOf(request, catalog);
    const scope = this.#scopeOf(catalog, principal, scopeName);
    const body = request.body;
    if (body instanceof JsonParseFailure) return rpcErrorReply(reply, 400, ErrorCode.ParseError, `Parse error: ${body.message}`);
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length === 0) return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: an empty batch.');
    if (messages.length > catalog.settings.maxBatch) {
      return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, `Invalid Request: a batch holds at most ${catalog.settings.maxBatch} messages.`);
    }
    const initialize = messages.find((message) => isObject(message) && message['method'] === 'initialize');
    let session: McpSession;
    let sessionId: string;
    if (initialize !== undefined) {
      if (messages.length > 1) return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: initialize must be sent alone.');
      const params = (initialize as { params?: { protocolVersion?: unknown } }).params;
      const requested = typeof params?.protocolVersion === 'string' ? params.protocolVersion : LATEST_PROTOCOL_VERSION;
      session = await this.#openSession(catalog, principal, scope, requested, clientHeadersOf(request));
      sessionId = this.#seal.seal(session);
    } else {
      const presented = request.headers['mcp-session-id'];
      if (typeof presented !== 'string' || presented === '') {
        return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required (send initialize first).');
      }
      const opened = this.#openPresented(presented, principal, scopeName);
      if (opened === undefined) return rpcErrorReply(reply, 404, MCP_ERROR.sessionNotFound, 'Session not found: start a new session with initialize.');
      session = opened;
      sessionId = presented;
    }
    const context: CallContext = {
      request,
      catalog,
      principal,
      session,
      sessionKey: createHash('sha256').update(sessionId).digest('base64url').slice(0, 22),
      scope,
      clientHeaders: clientHeadersOf(request),
      route: scopeName === undefined ? '/mcp' : '/mcp/:server',
    };
    const server = this.#serverFor(context);
    // Answers stream as SSE (as the SDK's transport does by default): the stream ends once
    // every request of the message is answered.
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    const close = (): void => void server.close().catch(() => undefined);
    let response: Response;
    try {
      const webRequest = new Request(`http://gateway${request.url}`, { method: 'POST', headers: webHeaders(request) });
      response = await transport.handleRequest(webRequest, { parsedBody: body });
    } catch (error) {
      close();
      throw error;
    }
    reply.code(response.status);
    response.headers.forEach((value, name) => {
      if (name !== 'content-length' && name !== 'connection') void reply.header(name, value);
    });
    reply.header('mcp-session-id', sessionId);
    if (response.body === null || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const text = response.body === null ? '' : await response.text();
      close();
      return reply.send(text);
    }
    const stream = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
    // A client that leaves aborts the upstream calls still running (the server's close aborts its handlers).
    stream.once('close', close);
    reply.raw.once('close', () => stream.destroy());
    return reply.send(stream);
  }

  /** DELETE: ends the upstream sessions (the sealed id then finds none of them). */
  async delete(request: FastifyRequest, reply: FastifyReply, scopeName: string | undefined): Promise<FastifyReply> {
    const catalog = this.#catalogOf(request.gateway.state);
    const principal = await this.#principalOf(request, catalog);
    this.#scopeOf(catalog, principal, scopeName);
    const presented = request.headers['mcp-session-id'];
    if (typeof presented !== 'string') return rpcErrorReply(reply, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required.');
    const session = this.#openPresented(presented, principal, scopeName);
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
    const session = this.#openPresented(presented, principal, scopeName);
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
    if (key !== undefined) return { id: `key:${key.id}`, kind: 'key', keyId: key.id, workspace: key.workspace, scopes: new Set() };
    const token = bearerOf(request.headers.authorization);
    const oauth = catalog.settings.oauth;
    if (oauth === undefined || !looksLikeJwt(token)) {
      // Without OAuth a JWT-shaped bearer can only be a gateway key.
      const found = authenticateApiKey(request.gateway.state, token, 'inference', 'authorization');
      delete request.headers.authorization;
      request.gateway.apiKey = found;
      return { id: `key:${found.id}`, kind: 'key', keyId: found.id, workspace: found.workspace, scopes: new Set() };
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

  #openPresented(presented: string, principal: McpPrincipal, scopeName: string | undefined): McpSession | undefined {
    const now = this.#now();
    // Opened ids are remembered (bounded): a session's every request need not decrypt again.
    let session = this.#opened.get(presented);
    if (session === undefined || session.expiresAt <= now) {
      session = this.#seal.open(presented, now);
      if (session !== undefined) {
        if (this.#opened.size >= MAX_OPENED_SESSIONS) this.#opened.delete(this.#opened.keys().next().value as string);
        this.#opened.set(presented, session);
      }
    }
    if (session === undefined || session.principal !== principal.id || session.scope !== scopeName) return undefined;
    return session;
  }

  #now(): number {
    return (this.#deps.now ?? Date.now)();
  }

  async #openSession(catalog: McpCatalog, principal: McpPrincipal, scope: McpServer | undefined, requested: string, clientHeaders: ClientHeaders): Promise<McpSession> {
    const now = this.#now();
    const servers = (scope === undefined ? [...catalog.servers.values()].filter((server) => server.admits(principal)) : [scope]).filter(
      (server) => now - (this.#failedInit.get(server.name) ?? Number.NEGATIVE_INFINITY) >= INIT_RETRY_MS,
    );
    const opened = await Promise.allSettled(servers.map((server) => this.upstreams.initialize(server, clientHeaders)));
    const upstreams: Record<string, UpstreamSession> = {};
    opened.forEach((outcome, index) => {
      const server = servers[index] as McpServer;
      if (outcome.status === 'fulfilled') {
        upstreams[server.name] = outcome.value;
        this.#failedInit.delete(server.name);
      } else {
        this.#failedInit.set(server.name, this.#now());
        this.#deps.logger.warn({ mcp_server: server.name, err: { message: (outcome.reason as Error).message } }, 'MCP server unreachable at initialize; its tools are left out');
      }
    });
    return {
      principal: principal.id,
      scope: scope?.name,
      version: SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      upstreams,
      expiresAt: this.#now() + catalog.settings.sessionTtlSeconds * 1000,
    };
  }

  /** The servers this session reaches that the caller may still use (a reload may have narrowed it). */
  #serversOf(context: CallContext): McpServer[] {
    if (context.scope !== undefined) return [context.scope];
    return [...context.catalog.servers.values()].filter((server) => server.admits(context.principal));
  }

  /** The upstream session to use: the sealed one, or one this replica re-established. */
  async #upstreamSession(context: CallContext, server: McpServer, renew: boolean): Promise<UpstreamSession> {
    const key = `${context.sessionKey}\u0000${server.name}`;
    if (!renew) {
      const known = this.#replaced.get(key) ?? context.session.upstreams[server.name];
      if (known !== undefined) return known;
    }
    // A server that just failed to initialize is not retried by every request (lists would wait on it).
    const failedAt = this.#failedInit.get(server.name);
    if (!renew && failedAt !== undefined && this.#now() - failedAt < INIT_RETRY_MS) {
      throw new UpstreamFailure('unavailable', `MCP server "${server.name}" is unavailable (it failed to initialize moments ago).`);
    }
    let fresh: UpstreamSession;
    try {
      fresh = await this.upstreams.initialize(server, context.clientHeaders);
      this.#failedInit.delete(server.name);
    } catch (error) {
      this.#failedInit.set(server.name, this.#now());
      throw error;
    }
    if (this.#replaced.size >= MAX_REPLACED_SESSIONS) this.#replaced.delete(this.#replaced.keys().next().value as string);
    this.#replaced.set(key, fresh);
    return fresh;
  }

  /** One upstream request; an expired upstream session is re-established once, transparently. */
  async #call<T>(context: CallContext, server: McpServer, method: string, params: Record<string, unknown> | undefined, schema: { parse(value: unknown): T }, signal: AbortSignal): Promise<T> {
    const send = async (renew: boolean): Promise<T> => {
      const upstream = await this.#upstreamSession(context, server, renew);
      return this.upstreams.request(server, upstream, context.clientHeaders, { method, params }, schema as never, signal) as Promise<T>;
    };
    try {
      return await send(false);
    } catch (error) {
      if (error instanceof UpstreamFailure && error.kind === 'session_expired') return send(true);
      throw error;
    }
  }

  /** Lists from every server in the session, merged; a server that fails is left out. */
  async #listAll<I>(context: CallContext, kind: 'tools' | 'prompts' | 'resources' | 'resourceTemplates', signal: AbortSignal, map: (server: McpServer, item: I) => I | undefined): Promise<I[]> {
    const spec = LISTS[kind];
    const servers = this.#serversOf(context);
    const lists = await Promise.allSettled(
      servers.map(async (server) => {
        const items: I[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_LIST_PAGES; page++) {
          const result = (await this.#call(context, server, spec.method, cursor === undefined ? undefined : { cursor }, spec.schema as { parse(value: unknown): unknown }, signal)) as Record<string, unknown>;
          for (const item of (result[spec.field] as I[] | undefined) ?? []) {
            const mapped = map(server, item);
            if (mapped !== undefined) items.push(mapped);
          }
          cursor = typeof result['nextCursor'] === 'string' ? result['nextCursor'] : undefined;
          if (cursor === undefined) break;
        }
        return items;
      }),
    );
    const merged: I[] = [];
    lists.forEach((outcome, index) => {
      if (outcome.status === 'fulfilled') merged.push(...outcome.value);
      else {
        const server = servers[index] as McpServer;
        this.#deps.logger.warn({ mcp_server: server.name, method: spec.method, err: { message: (outcome.reason as Error).message } }, 'MCP server left out of a list');
      }
    });
    return merged;
  }

  #exposedName(context: CallContext, server: McpServer, name: string): string {
    return context.scope === undefined ? `${server.name}${NAME_SEPARATOR}${name}` : name;
  }

  #exposedUri(context: CallContext, server: McpServer, uri: string): string {
    return context.scope === undefined ? `${server.name}${URI_SEPARATOR}${uri}` : uri;
  }

  /** The server and its own name for an exposed (prefixed) name, when the caller may use it. */
  #resolve(context: CallContext, exposed: string, separator: string): { server: McpServer; name: string } | undefined {
    let server: McpServer | undefined;
    let name: string;
    if (context.scope !== undefined) {
      server = context.scope;
      name = exposed;
    } else {
      const split = splitPrefixed(exposed, separator);
      if (split === undefined) return undefined;
      server = context.catalog.servers.get(split.server);
      name = split.name;
    }
    if (server === undefined || !server.admits(context.principal)) return undefined;
    return { server, name };
  }

  #serverFor(context: CallContext): Server {
    const server = new Server(
      { name: 'aigateway', version: '1' },
      {
        // logging: setLevel is accepted (the SDK answers it) though upstream log messages are not relayed.
        capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, logging: {} },
        jsonSchemaValidator: NO_SCHEMA_VALIDATOR,
      },
    );
    const tracked = <R>(method: string, target: () => { server: string | undefined; tool: string | undefined }, params: unknown, run: () => Promise<R>): Promise<R> =>
      this.#tracked(context, method, target, params, run);

    server.setRequestHandler(ListToolsRequestSchema, (_request, extra) =>
      tracked('tools/list', () => ({ server: context.scope?.name, tool: undefined }), undefined, async () => ({
        tools: await this.#listAll<Tool>(context, 'tools', extra.signal, (upstream, tool) => {
          if (!upstream.allowsTool(context.principal, tool.name)) return undefined;
          const exposed = upstream.exposedTool(tool.name);
          return exposed === undefined ? undefined : { ...tool, name: this.#exposedName(context, upstream, exposed) };
        }),
      })),
    );

    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const resolved = this.#resolve(context, request.params.name, NAME_SEPARATOR);
      const original = resolved === undefined ? undefined : resolved.server.originalTool(resolved.name);
      return tracked('tools/call', () => ({ server: resolved?.server.name, tool: original ?? request.params.name }), request.params, async () => {
        // Unknown, hidden and not-allowed tools get the same answer: the caller learns nothing of tools it may not call.
        if (resolved === undefined || original === undefined || !resolved.server.allowsTool(context.principal, original)) {
          throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
        }
        await this.#admit(context, resolved.server, original);
        const guard = resolved.server.guardrails === undefined && resolved.server.guardrailProblem === undefined ? undefined : await import('./mcp-guardrails.ts');
        if (guard !== undefined) await guard.checkArguments(resolved.server, original, request.params.arguments, context.request.gateway.metadata, extra.signal, this.#deps.dispatcher);
        const result = await this.#call(context, resolved.server, 'tools/call', { ...request.params, name: original }, CompatibilityCallToolResultSchema, extra.signal);
        if (guard !== undefined) await guard.checkResult(resolved.server, original, result, context.request.gateway.metadata, extra.signal, this.#deps.dispatcher);
        return result;
      });
    });

    server.setRequestHandler(ListPromptsRequestSchema, (_request, extra) =>
      tracked('prompts/list', () => ({ server: context.scope?.name, tool: undefined }), undefined, async () => ({
        prompts: await this.#listAll<Prompt>(context, 'prompts', extra.signal, (upstream, prompt) => ({ ...prompt, name: this.#exposedName(context, upstream, prompt.name) })),
      })),
    );

    server.setRequestHandler(GetPromptRequestSchema, (request, extra) => {
      const resolved = this.#resolve(context, request.params.name, NAME_SEPARATOR);
      return tracked('prompts/get', () => ({ server: resolved?.server.name, tool: request.params.name }), request.params, async () => {
        if (resolved === undefined) throw new RpcError(ErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
        await this.#admit(context, resolved.server, undefined);
        return this.#call(context, resolved.server, 'prompts/get', { ...request.params, name: resolved.name }, GetPromptResultSchema, extra.signal);
      });
    });

    server.setRequestHandler(ListResourcesRequestSchema, (_request, extra) =>
      tracked('resources/list', () => ({ server: context.scope?.name, tool: undefined }), undefined, async () => ({
        resources: await this.#listAll<Resource>(context, 'resources', extra.signal, (upstream, resource) => ({ ...resource, uri: this.#exposedUri(context, upstream, resource.uri) })),
      })),
    );

    server.setRequestHandler(ListResourceTemplatesRequestSchema, (_request, extra) =>
      tracked('resources/templates/list', () => ({ server: context.scope?.name, tool: undefined }), undefined, async () => ({
        resourceTemplates: await this.#listAll<ResourceTemplate>(context, 'resourceTemplates', extra.signal, (upstream, template) => ({
          ...template,
          uriTemplate: this.#exposedUri(context, upstream, template.uriTemplate),
        })),
      })),
    );

    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => {
      const resolved = this.#resolve(context, request.params.uri, URI_SEPARATOR);
      return tracked('resources/read', () => ({ server: resolved?.server.name, tool: undefined }), request.params, async () => {
        if (resolved === undefined) throw new RpcError(ErrorCode.InvalidParams, `Unknown resource: ${request.params.uri.slice(0, 200)}`);
        await this.#admit(context, resolved.server, undefined);
        const result = (await this.#call(context, resolved.server, 'resources/read', { ...request.params, uri: resolved.name }, ReadResourceResultSchema, extra.signal)) as {
          contents: Array<{ uri: string }>;
        };
        return { ...result, contents: result.contents.map((content) => ({ ...content, uri: this.#exposedUri(context, resolved.server, content.uri) })) };
      });
    });
    for (const [schema, method] of [
      [SubscribeRequestSchema, 'resources/subscribe'],
      [UnsubscribeRequestSchema, 'resources/unsubscribe'],
    ] as const) {
      server.setRequestHandler(schema, (request, extra) => {
        const resolved = this.#resolve(context, request.params.uri, URI_SEPARATOR);
        return tracked(method, () => ({ server: resolved?.server.name, tool: undefined }), request.params, async () => {
          if (resolved === undefined) throw new RpcError(ErrorCode.InvalidParams, `Unknown resource: ${request.params.uri.slice(0, 200)}`);
          await this.#admit(context, resolved.server, undefined);
          return this.#call(context, resolved.server, method, { ...request.params, uri: resolved.name }, EmptyResultSchema, extra.signal);
        });
      });
    }
    invalidParamsAsRpcErrors(server);
    return server;
  }

  /** Rate-limit policies that target MCP (an mcp_server or mcp_tool condition). */
  async #admit(context: CallContext, server: McpServer, tool: string | undefined): Promise<void> {
    const limiter = this.#deps.rateLimiter;
    if (limiter === undefined) return;
    const state = context.request.gateway.state;
    const policies = [...state.document.rateLimitPolicies, ...this.#deps.dynamicPolicies()].filter(
      (policy) => policy.type === 'requests' && policy.conditions.some((condition) => condition.key === 'mcp_server' || condition.key === 'mcp_tool'),
    );
    if (policies.length === 0) return;
    const facts = {
      workspace_id: context.principal.workspace,
      api_key: context.principal.keyId,
      provider: undefined,
      model: undefined,
      config: undefined,
      metadata: context.request.gateway.metadata,
      mcp_server: server.name,
      mcp_tool: tool,
    } as RequestFacts;
    try {
      await limiter.admit(policies, facts);
    } catch (error) {
      if (isGatewayError(error) && error.code === 'AIGW_ERR_RATE_LIMITED') {
        throw new RpcError(MCP_ERROR.rateLimited, error.message, { retry_after_seconds: Number(error.headers?.['retry-after'] ?? 1) });
      }
      throw error;
    }
  }

  /** Runs one JSON-RPC call and accounts it: metrics, an execute_tool span, one request-log record. */
  async #tracked<R>(context: CallContext, method: string, target: () => { server: string | undefined; tool: string | undefined }, params: unknown, run: () => Promise<R>): Promise<R> {
    const started = process.hrtime.bigint();
    const startedAtMs = Date.now();
    const { server, tool } = target();
    const span = method === 'tools/call' ? context.request.gateway.span?.startChild(`execute_tool ${tool ?? ''}`.trim(), spanAttributes(server, tool)) : undefined;
    let result: R | undefined;
    let failure: RpcError | undefined;
    try {
      result = await run();
      return result;
    } catch (error) {
      failure = toMcpError(error);
      throw failure;
    } finally {
      try {
        this.#account(context, method, server, tool, params, result, failure, started, startedAtMs, span);
      } catch (error) {
        this.#deps.logger.error({ err: { message: (error as Error).message } }, 'MCP call accounting failed');
      }
    }
  }

  #account(
    context: CallContext,
    method: string,
    server: string | undefined,
    tool: string | undefined,
    params: unknown,
    result: unknown,
    failure: RpcError | undefined,
    started: bigint,
    startedAtMs: number,
    span: { end(attributes?: Readonly<Record<string, string | number | boolean | undefined>>): void } | undefined,
  ): void {
    const latencyMs = Number(process.hrtime.bigint() - started) / 1e6;
    const status = failure === undefined ? 200 : statusOfRpcError(failure.code);
    const errorCode = failure === undefined ? undefined : errorCodeOf(failure.code);
    const serverLabel = server !== undefined && context.catalog.servers.has(server) ? server : 'none';
    this.#metrics.calls.inc({ server: serverLabel, method: METHODS.has(method) ? method : 'other', outcome: failure === undefined ? 'ok' : (errorCode ?? 'error') });
    this.#metrics.duration.observe({ server: serverLabel, method: METHODS.has(method) ? method : 'other' }, latencyMs / 1000);
    const isError = failure === undefined && isObject(result) && result['isError'] === true;
    span?.end({ 'error.type': failure === undefined ? (isError ? 'tool_error' : undefined) : (errorCode ?? String(failure.code)), 'aigateway.mcp.status': status });
    const sink = this.#deps.requestSink;
    if (sink === undefined) return;
    const request = context.request;
    const record: RequestRecord = {
      id: randomUUID(),
      traceId: request.gateway.traceId,
      startedAt: startedAtMs,
      method: 'POST',
      route: context.route,
      status,
      latencyMs,
      ttftMs: undefined,
      apiKeyId: context.principal.keyId,
      workspace: context.principal.workspace,
      configId: undefined,
      targetPath: undefined,
      provider: server === undefined ? undefined : `mcp:${server}`,
      model: tool,
      metadata: {
        ...request.gateway.metadata,
        mcp_method: method,
        ...(server === undefined ? {} : { mcp_server: server }),
        ...(tool === undefined ? {} : { mcp_tool: tool }),
        ...(context.principal.kind === 'oauth' ? { mcp_caller: context.principal.id } : {}),
        mcp_request_bytes: params === undefined ? 0 : Buffer.byteLength(JSON.stringify(params)),
        mcp_response_bytes: result === undefined ? 0 : Buffer.byteLength(JSON.stringify(result)),
        ...(isError ? { mcp_tool_error: true } : {}),
      },
      promptTokens: undefined,
      completionTokens: undefined,
      totalTokens: undefined,
      otelTraceId: request.gateway.span?.traceId,
      cacheStatus: undefined,
      retries: 0,
      guardrailVerdict: failure?.code === MCP_ERROR.guardrailDenied ? 'deny' : undefined,
      errorCode,
    };
    sink(record);
  }
}

const LISTS = {
  tools: { method: 'tools/list', field: 'tools', schema: ListToolsResultSchema },
  prompts: { method: 'prompts/list', field: 'prompts', schema: ListPromptsResultSchema },
  resources: { method: 'resources/list', field: 'resources', schema: ListResourcesResultSchema },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates', schema: ListResourceTemplatesResultSchema },
} as const;

const METHODS = new Set(['tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list', 'resources/templates/list', 'resources/read', 'resources/subscribe', 'resources/unsubscribe']);

function spanAttributes(server: string | undefined, tool: string | undefined): Record<string, string> {
  return {
    'gen_ai.operation.name': 'execute_tool',
    ...(tool === undefined ? {} : { 'gen_ai.tool.name': tool }),
    ...(server === undefined ? {} : { 'mcp.server.name': server }),
    'mcp.method.name': 'tools/call',
  };
}

/**
 * The SDK parses a request's params with zod before the handler runs and answers a
 * failure as an internal error (-32603); params that do not fit the method are the
 * caller's mistake: -32602.
 */
function invalidParamsAsRpcErrors(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers?: Map<string, (request: unknown, extra: unknown) => Promise<unknown>> })._requestHandlers;
  if (!(handlers instanceof Map)) return;
  for (const [method, handler] of handlers) {
    handlers.set(method, async (request, extra) => {
      try {
        return await handler(request, extra);
      } catch (error) {
        if (Array.isArray((error as { issues?: unknown })?.issues)) throw new RpcError(ErrorCode.InvalidParams, `Invalid params for ${method}.`);
        throw error;
      }
    });
  }
}

/**
 * A JSON-RPC error for the SDK to send: its code, message and data as they are (McpError
 * would prefix the message with its code, and the client prefixes it again).
 */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

function toMcpError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  if (error instanceof McpError) return new RpcError(error.code, error.message.replace(/^MCP error -?\d+: /, ''), error.data);
  if (error instanceof UpstreamFailure) {
    switch (error.kind) {
      case 'error':
        return new RpcError(error.rpcCode ?? ErrorCode.InternalError, error.message, error.rpcData);
      case 'timeout':
        return new RpcError(MCP_ERROR.upstreamTimeout, error.message);
      case 'too_large':
        return new RpcError(MCP_ERROR.upstreamTooLarge, error.message);
      default:
        return new RpcError(MCP_ERROR.upstreamUnavailable, error.message);
    }
  }
  const coded = error as { code?: unknown; message?: unknown; data?: unknown };
  if (error instanceof Error && typeof coded.code === 'number' && Number.isInteger(coded.code)) return new RpcError(coded.code, error.message, coded.data);
  if (isGatewayError(error)) return new RpcError(error.status === 429 ? MCP_ERROR.rateLimited : ErrorCode.InternalError, error.message);
  return new RpcError(ErrorCode.InternalError, 'Internal error.');
}

function statusOfRpcError(code: number): number {
  switch (code) {
    case ErrorCode.InvalidParams:
    case ErrorCode.InvalidRequest:
    case ErrorCode.MethodNotFound:
      return 400;
    case MCP_ERROR.rateLimited:
      return 429;
    case MCP_ERROR.forbidden:
      return 403;
    case MCP_ERROR.guardrailDenied:
      return 446;
    case MCP_ERROR.upstreamTimeout:
      return 504;
    case MCP_ERROR.upstreamUnavailable:
    case MCP_ERROR.upstreamTooLarge:
      return 502;
    default:
      return 500;
  }
}

function errorCodeOf(code: number): string | undefined {
  switch (code) {
    case ErrorCode.InvalidParams:
      return 'AIGW_ERR_INVALID_BODY';
    case MCP_ERROR.rateLimited:
      return 'AIGW_ERR_RATE_LIMITED';
    case MCP_ERROR.guardrailDenied:
      return 'AIGW_ERR_GUARDRAIL_DENIED';
    case MCP_ERROR.upstreamTimeout:
      return 'AIGW_ERR_UPSTREAM_TIMEOUT';
    case MCP_ERROR.upstreamUnavailable:
      return 'AIGW_ERR_UPSTREAM_UNREACHABLE';
    case MCP_ERROR.upstreamTooLarge:
      return 'AIGW_ERR_UPSTREAM_INVALID_RESPONSE';
    default:
      return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function bearerOf(value: string | undefined): string | undefined {
  const match = value === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(value.trim());
  return match?.[1];
}

function clientHeadersOf(request: FastifyRequest): ClientHeaders {
  const authorization = request.headers.authorization;
  return { authorization: typeof authorization === 'string' ? authorization : undefined };
}

/** The headers the SDK transport reads (accept, content type, protocol version). */
function webHeaders(request: FastifyRequest): Headers {
  const headers = new Headers();
  for (const name of ['accept', 'content-type', 'mcp-protocol-version']) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  return headers;
}

export function rpcErrorReply(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply.code(status).header('content-type', 'application/json').send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

const registered = new WeakMap<Registry, { calls: Counter<'server' | 'method' | 'outcome'>; duration: Histogram<'server' | 'method'> }>();

/** MCP series on the gateway's registry; labels are configured server names and a fixed method set. */
function metricsOf(registry: Registry): { calls: Counter<'server' | 'method' | 'outcome'>; duration: Histogram<'server' | 'method'> } {
  let metrics = registered.get(registry);
  if (metrics === undefined) {
    metrics = {
      calls: new Counter({ name: 'aigateway_mcp_requests_total', help: 'MCP JSON-RPC requests by server, method and outcome', labelNames: ['server', 'method', 'outcome'], registers: [registry] }),
      duration: new Histogram({
        name: 'aigateway_mcp_request_duration_seconds',
        help: 'MCP JSON-RPC request duration by server and method',
        labelNames: ['server', 'method'],
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [registry],
      }),
    };
    registered.set(registry, metrics);
  }
  return metrics;
}
