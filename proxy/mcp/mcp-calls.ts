import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NAME_SEPARATOR, splitPrefixed, URI_SEPARATOR, type McpCatalog, type McpPrincipal, type McpServer } from './mcp-catalog.ts';
import type { McpSession, UpstreamSession } from './mcp-session.ts';
import { UpstreamFailure, type ClientHeaders, type McpUpstreams, type ResultSchema } from './mcp-upstream.ts';

// The gateway session's side of the upstreams: opening the upstream sessions at initialize,
// finding (or re-establishing) the one to use for a call, one call with a transparent
// retry on an expired upstream session, merged lists, and the naming rule both ways.

/** One HTTP request's view of its gateway session. */
export interface CallContext {
  readonly request: FastifyRequest;
  readonly catalog: McpCatalog;
  readonly principal: McpPrincipal;
  readonly session: McpSession;
  /** Keys this replica's re-established upstream sessions (a hash of the session id, or the caller when sessionless). */
  readonly sessionKey: string;
  readonly scope: McpServer | undefined;
  readonly clientHeaders: ClientHeaders;
  readonly route: string;
  /** The 2026-07-28 revision (sessionless): results carry resultType. */
  readonly modern: boolean;
}

/** Pages of one upstream list followed at most (a server that pages forever is cut). */
const MAX_LIST_PAGES = 20;
/** Upstream sessions re-established on this replica (expired, missing in the sealed id, or sessionless callers'). */
const MAX_REPLACED_SESSIONS = 10_000;
/** How long a server that failed to initialize is reported unavailable without trying again. */
const INIT_RETRY_MS = 5_000;

export const LISTS = {
  tools: { method: 'tools/list', field: 'tools' },
  prompts: { method: 'prompts/list', field: 'prompts' },
  resources: { method: 'resources/list', field: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates' },
} as const;

export class McpCalls {
  readonly upstreams: McpUpstreams;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #replaced = new Map<string, UpstreamSession>();
  /** When a server last failed to initialize on this replica (by name; bounded by the configured servers). */
  readonly #failedInit = new Map<string, number>();

  constructor(upstreams: McpUpstreams, logger: Logger, now: () => number) {
    this.upstreams = upstreams;
    this.#logger = logger;
    this.#now = now;
  }

  async openSession(catalog: McpCatalog, principal: McpPrincipal, scope: McpServer | undefined, requested: string, clientHeaders: ClientHeaders): Promise<McpSession> {
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
        this.#logger.warn({ mcp_server: server.name, err: { message: (outcome.reason as Error).message } }, 'MCP server unreachable at initialize; its tools are left out');
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
  serversOf(context: CallContext): McpServer[] {
    if (context.scope !== undefined) return [context.scope];
    return [...context.catalog.servers.values()].filter((server) => server.admits(context.principal));
  }

  /** The upstream session this replica re-established for this one, else the sealed one (undefined: neither). */
  #knownSession(context: CallContext, server: McpServer): UpstreamSession | undefined {
    const replaced = this.#replaced.size === 0 ? undefined : this.#replaced.get(`${context.sessionKey}\u0000${server.name}`);
    return replaced ?? context.session.upstreams[server.name];
  }

  /** A new upstream session in place of a missing or expired one. */
  async #renewedSession(context: CallContext, server: McpServer, renew: boolean): Promise<UpstreamSession> {
    const key = `${context.sessionKey}\u0000${server.name}`;
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
  async call<T>(context: CallContext, server: McpServer, method: string, params: Record<string, unknown> | undefined, schema: ResultSchema<T>, signal: AbortSignal): Promise<T> {
    const request = { method, params };
    try {
      const known = this.#knownSession(context, server);
      const upstream = known ?? (await this.#renewedSession(context, server, false));
      return await this.upstreams.request(server, upstream, context.clientHeaders, request, schema, signal);
    } catch (error) {
      if (!(error instanceof UpstreamFailure) || error.kind !== 'session_expired') throw error;
      const renewed = await this.#renewedSession(context, server, true);
      return this.upstreams.request(server, renewed, context.clientHeaders, request, schema, signal);
    }
  }

  /** Lists from every server in the session, merged; a server that fails is left out. */
  async listAll<I>(context: CallContext, kind: keyof typeof LISTS, schema: ResultSchema<unknown>, signal: AbortSignal, map: (server: McpServer, item: I) => I | undefined): Promise<I[]> {
    const spec = LISTS[kind];
    const servers = this.serversOf(context);
    const lists = await Promise.allSettled(
      servers.map(async (server) => {
        const items: I[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_LIST_PAGES; page++) {
          const result = (await this.call(context, server, spec.method, cursor === undefined ? undefined : { cursor }, schema, signal)) as Record<string, unknown>;
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
        this.#logger.warn({ mcp_server: server.name, method: spec.method, err: { message: (outcome.reason as Error).message } }, 'MCP server left out of a list');
      }
    });
    return merged;
  }
}

export function exposedName(context: CallContext, server: McpServer, name: string): string {
  return context.scope === undefined ? `${server.name}${NAME_SEPARATOR}${name}` : name;
}

export function exposedUri(context: CallContext, server: McpServer, uri: string): string {
  return context.scope === undefined ? `${server.name}${URI_SEPARATOR}${uri}` : uri;
}

/** The server and its own name for an exposed (prefixed) name, when the caller may use it. */
export function resolveExposed(context: CallContext, exposed: string, separator: string): { server: McpServer; name: string } | undefined {
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
