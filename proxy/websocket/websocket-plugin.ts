import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { API_KEY_HEADER } from '../auth/api-key-auth.ts';
import type { BudgetRuntime } from '../budgets/budget-admission.ts';
import { SessionBudget } from '../budgets/session-budget.ts';
import { factsOf, type PolicyRuntime } from '../endpoints/policy-admission.ts';
import { attachedGuardrailsOf, guardrailsOf, mergeGuardrails, type CompiledGuardrails, type GuardrailRuntime } from '../endpoints/guardrail-flow.ts';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import type { RequestContext } from '../request-context.ts';
import type { Admission } from '../ratelimit/rate-limiter.ts';
import { reachableTargets, type ReachableTarget } from '../routing/reachable-targets.ts';
import { selectRoute, type RouteSelection } from '../routing/select-route.ts';
import { RealtimeRelay, realtimeWorstCase, type RealtimeEstimate } from './realtime-relay.ts';
import { connectRealtimeUpstream, type UpstreamSocket } from './realtime-upstream.ts';
import { ResponsesSession, type TurnDispatcher } from './responses-socket.ts';
import { DEFAULT_SOCKET_LIMITS, SocketRegistry, type Session, type SocketLimits } from './socket-registry.ts';
import { isUpgrade, UpgradeRouter } from './websocket-upgrade.ts';

// The WebSocket transports (docs/websocket.md): GET /v1/responses upgraded (Responses API
// WebSocket mode) and GET /v1/realtime (relayed to OpenAI or Azure OpenAI realtime).
// An upgrade runs through Fastify's router and hooks before it is accepted
// (websocket-upgrade.ts, which loads `ws` only then), so both are ordinary routes: the gateway's onRequest hooks authenticate the key
// (default deny, scope `inference`), count it in flight, and the preHandler below admits it
// (socket caps, routing, rate limits, budgets). A refusal is an HTTP answer on the upgrade
// (401/403/404/429/503), never an accepted socket closed at once.

export interface WebSocketDeps extends PolicyRuntime, BudgetRuntime {
  readonly logger: Logger;
  /** What input guardrails on realtime text need (metrics, webhooks through the egress-guarded agent). */
  readonly guardrails: GuardrailRuntime;
  readonly limits?: Partial<SocketLimits> | undefined;
}

/** The browser form of a key: `openai-insecure-api-key.<key>` among the offered subprotocols. */
const KEY_SUBPROTOCOL = 'openai-insecure-api-key.';

/** Client headers that belong to the upgrade, not to the turns dispatched from it. */
const UPGRADE_HEADERS = new Set(['host', 'connection', 'upgrade', 'content-length', 'transfer-encoding', 'accept-encoding', 'origin', 'cookie', 'openai-beta']);

interface Admitted {
  /** The session slot taken before the upgrade. */
  readonly release: () => void;
  readonly selection: RouteSelection | undefined;
  readonly admission: Admission | undefined;
  readonly upstream: UpstreamSocket | undefined;
  readonly inputGuards: CompiledGuardrails | undefined;
  /** Realtime: the session's budget, charged per response.done. */
  readonly budget: SessionBudget | undefined;
  readonly estimate: RealtimeEstimate;
}

const ADMITTED = Symbol('aigateway.websocketAdmitted');
type AdmittedRequest = FastifyRequest & { [ADMITTED]?: Admitted };

export function websocketPlugin(deps: WebSocketDeps): FastifyPluginAsync {
  return async (app) => {
    const limits: SocketLimits = { ...DEFAULT_SOCKET_LIMITS, ...deps.limits };
    const registry = new SocketRegistry(limits);
    const upgrades = new UpgradeRouter(app, {
      maxPayload: limits.maxMessageBytes,
      handleProtocols: chooseSubprotocol,
      // Before the router sees the upgrade: a key offered as a subprotocol becomes the key header.
      beforeRouting: liftSubprotocolKey,
      onSocketError: (error, socket) => {
        deps.logger.warn({ err: { message: error.message } }, 'websocket session failed');
        socket.terminate();
      },
      onRoutingError: (error) => deps.logger.warn({ err: { message: error.message } }, 'websocket upgrade failed'),
    });
    // Shutdown (and a rolling upgrade): each session gets a close frame with a reason now;
    // stragglers are cut after the grace. Not awaited: close hooks have a 10 s budget, and
    // the server's close waits for the sockets anyway.
    app.addHook('preClose', (done) => {
      upgrades.stop();
      void registry.drainAll();
      done();
    });

    const dispatcherFor = (request: FastifyRequest): TurnDispatcher => {
      const headers = turnHeaders(request);
      return async (body, signal) => {
        const response = await app.inject({ method: 'POST', url: '/v1/responses', headers, payload: body, payloadAsStream: true, signal });
        // A turn given up (client gone, send buffer full) is a client that left: the pipeline
        // aborts the upstream call and records a 499.
        const destroy = (): void => {
          response.raw.res.destroy();
        };
        if (signal.aborted) destroy();
        else signal.addEventListener('abort', destroy, { once: true });
        return { status: response.statusCode, body: response.stream() };
      };
    };

    app.get('/v1/responses', { config: { gatewayScope: 'inference' }, preHandler: (request, reply) => admit(deps, registry, request, reply.raw, 'responses') }, async (request, reply) => {
      const socket = await upgrades.accept(request, reply);
      if (socket === undefined) return;
      const session = new ResponsesSession(socket, request.gateway.apiKey?.id, dispatcherFor(request), limits);
      hold(registry, session, request, socket);
    });

    app.get('/v1/realtime', { config: { gatewayScope: 'inference' }, preHandler: (request, reply) => admit(deps, registry, request, reply.raw, 'realtime') }, async (request, reply) => {
      const admitted = (request as AdmittedRequest)[ADMITTED];
      // The 101 carries the remaining budget, as an HTTP answer does.
      if (admitted?.budget !== undefined) upgrades.setUpgradeHeaders(request, admitted.budget.headers);
      const socket = await upgrades.accept(request, reply);
      if (socket === undefined) return;
      if (admitted?.upstream === undefined) {
        socket.close(1011, 'upstream not connected');
        return;
      }
      const relay = new RealtimeRelay(socket, admitted.upstream, {
        context: request.gateway,
        limits,
        logger: deps.logger,
        rateLimiter: deps.rateLimiter,
        admission: admitted.admission,
        budget: admitted.budget,
        estimate: admitted.estimate,
        guardrails: admitted.inputGuards === undefined ? undefined : { compiled: admitted.inputGuards, runtime: deps.guardrails },
      });
      hold(registry, relay, request, socket);
    });
  };
}

/** A held session: counted, kept alive, and recorded once, when it ends (the request's finish point). */
function hold(registry: SocketRegistry, session: Session, request: FastifyRequest, socket: WebSocket): void {
  registry.add(session, (request as AdmittedRequest)[ADMITTED]?.release ?? noop);
  socket.once('close', () => recordSession(request));
}

/**
 * The upgrade's response object never ends (ws wrote the 101 on the socket itself): it is
 * told what went out and its 'close' is emitted here, once the session's usage is in the
 * context, so the finish point (observability/request-finish.ts) records the session once,
 * as a 101 that completed, not as a client that left.
 */
function recordSession(request: FastifyRequest): void {
  const response = upgradeResponses.get(request);
  if (response === undefined) return;
  upgradeResponses.delete(request);
  response.statusCode = 101;
  (response as unknown as { _header: string })._header = 'HTTP/1.1 101 Switching Protocols\r\n\r\n';
  request.gateway.upstreamDoneAt ??= process.hrtime.bigint();
  response.emit('close');
}

const upgradeResponses = new WeakMap<FastifyRequest, ServerResponse>();

/**
 * Admission before the upgrade: the socket caps, the route (a saved config, provider headers
 * or the `model` query parameter; the realtime route needs one), the rate limits of the key
 * and what it routes to (a session counted as one request), and its budgets.
 */
async function admit(deps: WebSocketDeps, registry: SocketRegistry, request: FastifyRequest, response: ServerResponse, kind: 'responses' | 'realtime'): Promise<void> {
  // A plain GET (no upgrade): the same 404 in the OpenAI shape as any unknown route.
  if (!isUpgrade(request)) throw new GatewayError('AIGW_ERR_NOT_FOUND', `Unknown route: GET ${request.url.split('?')[0]} (it takes WebSocket upgrades only).`);
  const context = request.gateway;
  const release = registry.reserve(context.apiKey?.id);
  try {
    await admitted(deps, registry, request, response, kind, release);
  } catch (error) {
    release();
    throw error;
  }
}

async function admitted(deps: WebSocketDeps, registry: SocketRegistry, request: FastifyRequest, response: ServerResponse, kind: 'responses' | 'realtime', release: () => void): Promise<void> {
  const context = request.gateway;
  const model = queryModel(request.query);
  let selection: RouteSelection | undefined;
  let targets: readonly ReachableTarget[] = [];
  if (kind === 'realtime' || model !== undefined || routed(request)) {
    if (kind === 'realtime' && model === undefined && !routed(request)) {
      throw new GatewayError('AIGW_ERR_INVALID_BODY', 'Name the model: /v1/realtime?model=… (or route with x-gateway-config).', { param: 'model' });
    }
    selection = selectRoute(request.headers, context.state, { apiKey: context.apiKey, model });
    context.configId = selection.configId;
    context.model = model;
    context.modelRequested = model;
    targets = reachableTargets(selection.plan, context.state, { body: model === undefined ? undefined : { model }, metadata: context.metadata, pathname: request.routeOptions.url ?? '' });
  }
  const admission = await admitSession(deps, context, targets);
  const resolved = { targets, facts: factsOf(context, targets) };
  // Budgets (docs/websocket.md): a realtime session reserves its first response's worst case
  // now and is charged per response.done; a Responses turn is an HTTP request of its own,
  // charged by that route, so the upgrade only checks the key has something left.
  const estimate: RealtimeEstimate = { prompt: 0, audioPrompt: 0 };
  let budget: SessionBudget | undefined;
  try {
    budget = await SessionBudget.open(deps, context, resolved, kind === 'realtime' ? () => realtimeWorstCase(context, targets, estimate) : () => SOMETHING_LEFT);
  } catch (error) {
    refundTokens(deps, admission);
    throw error;
  }
  if (kind === 'responses') {
    budget?.close();
    budget = undefined;
  }
  // Realtime: the route's and the attached input guardrails, checked on text frames.
  const inputGuards =
    kind === 'realtime' && selection !== undefined ? mergeGuardrails(guardrailsOf(selection.plan.settings, context.state), attachedGuardrailsOf(context.state, () => resolved)) : undefined;
  let upstream: UpstreamSocket | undefined;
  try {
    upstream = kind === 'realtime' && selection !== undefined ? await connectRealtimeUpstream(selection, request, model, registry.limits) : undefined;
  } catch (error) {
    budget?.close();
    refundTokens(deps, admission);
    throw error;
  }
  (request as AdmittedRequest)[ADMITTED] = { release, selection, admission, upstream, inputGuards, budget, estimate };
  // Past this point the upgrade proceeds; the raw response is detached from the socket so
  // that its 'close' (the finish point) fires when the session ends, not when ws takes it.
  const socket = request.raw.socket;
  if (response.socket === socket) {
    upgradeResponses.set(request, response);
    response.detachSocket(socket);
    // A client gone before the upgrade completes: the session never starts; account it now.
    socket.once('close', () => {
      release();
      if (upstream !== undefined && !upstream.relayed) {
        upstream.socket.terminate();
        budget?.close();
      }
      setImmediate(() => recordSession(request));
    });
  }
}

async function admitSession(deps: WebSocketDeps, context: RequestContext, targets: readonly ReachableTarget[]): Promise<Admission | undefined> {
  const limiter = deps.rateLimiter;
  if (limiter === undefined) return undefined;
  const fromState = context.state.document.rateLimitPolicies;
  const fromApi = deps.dynamicPolicies();
  if (fromState.length === 0 && fromApi.length === 0) return undefined;
  return limiter.admit(fromApi.length === 0 ? fromState : [...fromState, ...fromApi], factsOf(context, targets), 1);
}

/** What a Responses upgrade asks of a budget: one unit, so a key with nothing left is refused. */
const SOMETHING_LEFT = { costUsd: 1e-6, tokens: 1 } as const;

/** An upgrade refused after its rate-limit admission gives back the tokens it reserved. */
function refundTokens(deps: WebSocketDeps, admission: Admission | undefined): void {
  if (deps.rateLimiter !== undefined && admission !== undefined && admission.tokenWindows.length > 0) deps.rateLimiter.settleTokens(admission, 0);
}

function noop(): void {}

function routed(request: FastifyRequest): boolean {
  const headers = request.headers;
  return headers[HEADER.config] !== undefined || headers[HEADER.provider] !== undefined || headers[HEADER.virtualKey] !== undefined;
}

function queryModel(query: unknown): string | undefined {
  if (typeof query !== 'object' || query === null) return undefined;
  const model = (query as Record<string, unknown>)['model'];
  return typeof model === 'string' && model !== '' && model.length <= 256 ? model : undefined;
}

/** The headers each turn is dispatched with: the client's (the key as auth left it), minus the upgrade's own. */
function turnHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (UPGRADE_HEADERS.has(name) || name.startsWith('sec-websocket-') || typeof value !== 'string') continue;
    headers[name] = value;
  }
  headers['content-type'] = 'application/json';
  headers['accept'] = 'text/event-stream';
  return headers;
}

/** A key offered as the browser subprotocol becomes the key header (unless one was sent). */
function liftSubprotocolKey(request: IncomingMessage): void {
  const offered = request.headers['sec-websocket-protocol'];
  if (typeof offered !== 'string' || !offered.includes(KEY_SUBPROTOCOL) || request.headers[API_KEY_HEADER] !== undefined) return;
  for (const protocol of offered.split(',')) {
    const trimmed = protocol.trim();
    if (trimmed.startsWith(KEY_SUBPROTOCOL)) {
      request.headers[API_KEY_HEADER] = trimmed.slice(KEY_SUBPROTOCOL.length);
      return;
    }
  }
}

/** The subprotocol answered: `realtime` when offered, else the first that is not a key; never the key. */
function chooseSubprotocol(protocols: Set<string>): string | false {
  if (protocols.has('realtime')) return 'realtime';
  for (const protocol of protocols) if (!protocol.startsWith(KEY_SUBPROTOCOL)) return protocol;
  return false;
}

