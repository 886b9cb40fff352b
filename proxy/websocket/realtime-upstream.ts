import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { GatewayState } from '../config/gateway-state.ts';
import type { PlanNode } from '../config/routing-plan.ts';
import { GatewayError } from '../errors.ts';
import { headerValue } from '../gateway-headers.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { pickDeployment } from '../providers/azure-openai/azure-openai-adapter.ts';
import { azureResourceRoot, azureSettingsOf } from '../providers/azure-openai/azure-openai-options.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import type { RouteSelection } from '../routing/select-route.ts';
import { guardedLookup, type EgressPolicy } from '../upstream/egress-policy.ts';
import { redactor, secretsOfTarget } from '../upstream/guarded-call.ts';
import type { SocketLimits } from './socket-registry.ts';
import { loadWs } from './websocket-upgrade.ts';

// The realtime relay's upstream side: the route's first target that speaks realtime, opened
// before the client's upgrade is accepted (a provider that refuses is a 502 on the upgrade),
// through the same egress policy as every upstream call (the resolved address is checked).

/** Families whose realtime API the relay speaks. */
const REALTIME_FAMILIES = new Set(['openai', 'azure-openai']);
const HANDSHAKE_TIMEOUT_MS = 10_000;

export interface UpstreamSocket {
  readonly socket: WebSocket;
  readonly provider: string;
  readonly model: string | undefined;
  /** The relay took it (else it is closed when the client leaves before the upgrade). */
  relayed: boolean;
}

/** Opens the upstream socket for the route's first realtime target; throws the HTTP refusal. */
export async function connectRealtimeUpstream(selection: RouteSelection, request: FastifyRequest, model: string | undefined, limits: SocketLimits): Promise<UpstreamSocket> {
  const context = request.gateway;
  let refusal: GatewayError | undefined;
  for (const leaf of leavesOf(selection.plan, model)) {
    let target: ResolvedTarget;
    try {
      target = resolveTarget(leaf.settings, leaf.path, context.state, request.headers, leaf.origin);
    } catch (error) {
      refusal ??= error instanceof GatewayError ? error : undefined;
      continue;
    }
    if (!REALTIME_FAMILIES.has(target.adapter.family) || target.adapter.forward === undefined) {
      refusal ??= new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no realtime WebSocket API; route /v1/realtime to openai or azure-openai.`, {
        param: 'model',
      });
      continue;
    }
    const upstreamModel = stringOf(leaf.settings.override_params?.['model']) ?? model;
    try {
      const socket = await openUpstream(target, upstreamModel, request, context.state, limits);
      context.provider = target.provider;
      context.model = upstreamModel;
      context.upstreamStartedAt = process.hrtime.bigint();
      return { socket, provider: target.provider, model: upstreamModel, relayed: false };
    } catch (error) {
      refusal = error instanceof GatewayError ? error : new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', 'The realtime upstream could not be reached.');
    }
  }
  throw refusal ?? new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', 'This route has no target that serves /v1/realtime.', { param: 'model' });
}

/** The plan's leaves in the order a fallback would try them (a conditional's matched branch). */
function leavesOf(plan: PlanNode, model: string | undefined): PlanNode[] {
  const leaves: PlanNode[] = [];
  const visit = (node: PlanNode, depth: number): void => {
    if (depth > 32 || leaves.length >= 16) return;
    if (node.mode === undefined) {
      leaves.push(node);
      return;
    }
    if (node.mode === 'conditional') {
      const query = { metadata: undefined, params: model === undefined ? {} : { model }, url: { pathname: '/v1/realtime' } };
      const matched = node.conditions.find((condition) => condition.test(query))?.child ?? node.defaultChild;
      if (matched !== undefined) visit(matched, depth + 1);
      return;
    }
    for (const child of node.mode === 'single' ? node.children.slice(0, 1) : node.children) visit(child, depth + 1);
  };
  visit(plan, 0);
  return leaves;
}

async function openUpstream(target: ResolvedTarget, model: string | undefined, request: FastifyRequest, state: GatewayState, limits: SocketLimits): Promise<WebSocket> {
  const query = new URLSearchParams();
  const forward = target.adapter.forward;
  if (forward === undefined) throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no realtime API.`);
  let planned: { url: URL; headers: Record<string, string> };
  if (target.adapter.family === 'azure-openai') {
    // Azure names a deployment: the v1 API as `model`, the dated API (api-version) as `deployment`.
    const settings = azureSettingsOf(target.options);
    const deployment = pickDeployment(settings, model, false);
    const name = deployment?.deploymentId ?? model;
    if (name !== undefined) query.set('model', name);
    const apiVersion = deployment?.apiVersion ?? settings.apiVersion;
    planned = forward(target, { method: 'GET', path: 'realtime', query });
    if (apiVersion !== undefined) {
      const dated = new URLSearchParams({ 'api-version': apiVersion });
      if (name !== undefined) dated.set('deployment', name);
      planned = { ...planned, url: new URL(`${azureResourceRoot(target.baseUrl)}/openai/realtime?${dated.toString()}`) };
    }
  } else {
    if (model !== undefined) query.set('model', model);
    planned = forward(target, { method: 'GET', path: 'realtime', query });
  }
  const url = new URL(planned.url);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  const headers: Record<string, string> = { ...planned.headers };
  // The beta realtime interface is chosen by this header; the client's choice goes along.
  const beta = headerValue(request.headers['openai-beta']);
  if (beta !== undefined && /^realtime=v\d+$/.test(beta)) headers['openai-beta'] = beta;

  const policy: EgressPolicy = target.hostChosenBy === 'operator' ? state.egress : state.clientEgress;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // An address literal never reaches the lookup: it is checked here.
  const denied = policy.checkName(host) ?? (isIP(host) === 0 ? undefined : policy.check(host, host));
  if (denied !== undefined) throw new GatewayError('AIGW_ERR_EGRESS_DENIED', denied, { param: 'model' });
  const redact = redactor(secretsOfTarget(target));
  const { WebSocket } = await loadWs();

  return new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(url, {
      headers,
      lookup: guardedLookup(() => policy) as never,
      maxPayload: limits.maxMessageBytes,
      perMessageDeflate: false,
      followRedirects: false,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    });
    const fail = (error: GatewayError): void => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.terminate();
      reject(error);
    };
    socket.once('open', () => {
      socket.removeAllListeners('unexpected-response');
      // Nothing is read until the relay listens (the provider speaks first: session.created).
      socket.pause();
      resolve(socket);
    });
    socket.once('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 502;
      response.resume();
      fail(
        new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `The realtime upstream (${target.provider}) refused the connection with status ${status}.`, {
          status: status === 429 ? 429 : 502,
        }),
      );
    });
    socket.once('error', (error) => {
      const message = redact(error.message).slice(0, 300);
      fail(
        (error as { code?: string }).code === 'AIGW_ERR_EGRESS_DENIED' || error.name === 'EgressDeniedError'
          ? new GatewayError('AIGW_ERR_EGRESS_DENIED', message, { param: 'model' })
          : new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `The realtime upstream (${target.provider}) could not be reached: ${message}`),
      );
    });
  });
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
