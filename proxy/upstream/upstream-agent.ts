import { isIP, type Socket } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { compileEgressPolicy, guardedLookup, type EgressPolicy } from './egress-policy.ts';
import { EgressDeniedError } from '../errors.ts';

// One undici Agent for the process: it keeps a keep-alive pool per upstream origin, and it
// lives outside the config snapshot so a reload never drops warm connections. Every new
// connection passes the egress policy of the snapshot in force at connect time, and the
// agent remembers where each open connection goes: when a reload tightens the policy,
// closeDeniedConnections() destroys the warm connections the new policy denies, so no
// request rides a pooled socket to an origin that is no longer allowed.
//
// Hosts a request chose (x-gateway-custom-host, an inline custom_host, an Azure resource
// named by the request) go through a second agent with its own pools and its own policy
// (`egress.clientAllow`): a socket the operator's policy let through to an in-cluster model
// is never reused for a client's request to the same origin.

export interface UpstreamAgentOptions {
  /** Time to the response headers (ms); a routing config's request_timeout is tighter. */
  headersTimeoutMs?: number;
  /** Idle time between body chunks (ms); streams of slow models need it long. */
  bodyTimeoutMs?: number;
  connectTimeoutMs?: number;
  connectionsPerOrigin?: number;
  /** The egress policy for operator-configured hosts (read at each connect, so reloads take effect). */
  egress?: () => EgressPolicy;
  /** The egress policy for hosts a request chose; default: public addresses only (never `egress`). */
  clientEgress?: () => EgressPolicy;
}

/** Who chose the host a call goes to: the operator (state, custom resources) or the request. */
export type HostChooser = 'operator' | 'request';

const CLIENT_HOSTS = Symbol('aigateway.clientHosts');

// A caller that forgets the client policy gets the strictest one, not the operator's.
const PUBLIC_ONLY = compileEgressPolicy([], 'egress.clientAllow');
const publicOnly = (): EgressPolicy => PUBLIC_ONLY;

export type UpstreamAgent = Agent & {
  /** Destroys open connections whose destination the current egress policy denies; returns how many. */
  closeDeniedConnections(): number;
  /** Closes this agent and the one for hosts a request chose. */
  closeAll(): Promise<void>;
  readonly [CLIENT_HOSTS]: Agent;
};

export function createUpstreamAgent(options: UpstreamAgentOptions = {}): UpstreamAgent {
  const operator = guardedAgent(options, options.egress);
  const client = guardedAgent(options, options.clientEgress ?? (options.egress === undefined ? undefined : publicOnly));
  return Object.assign(operator.agent, {
    [CLIENT_HOSTS]: client.agent,
    closeDeniedConnections: () => operator.closeDenied() + client.closeDenied(),
    closeAll: async () => {
      await Promise.all([operator.agent.close(), client.agent.close()]);
    },
  });
}

/**
 * The dispatcher for a call whose host `chosenBy` picked: the request-chosen pools of the
 * gateway's agent, or the dispatcher itself (the operator's pools, or any other dispatcher).
 */
export function dispatcherFor(dispatcher: Dispatcher, chosenBy: HostChooser): Dispatcher {
  if (chosenBy === 'operator' || !(CLIENT_HOSTS in dispatcher)) return dispatcher;
  return (dispatcher as UpstreamAgent)[CLIENT_HOSTS];
}

function guardedAgent(options: UpstreamAgentOptions, egress: (() => EgressPolicy) | undefined): { agent: Agent; closeDenied: () => number } {
  const timeout = options.connectTimeoutMs ?? 10_000;
  /** Open upstream sockets and the host name each was opened for. */
  const open = new Map<Socket, string>();
  const connect =
    egress === undefined
      ? { timeout }
      : trackedConnector(guardedConnector(buildConnector({ timeout, lookup: guardedLookup(egress) } as buildConnector.BuildOptions), egress), egress, open);
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    headersTimeout: options.headersTimeoutMs ?? 600_000,
    bodyTimeout: options.bodyTimeoutMs ?? 600_000,
    connections: options.connectionsPerOrigin ?? 512,
    connect,
  });
  const closeDenied = (): number => {
    if (egress === undefined) return 0;
    let closed = 0;
    for (const [socket, hostname] of open) {
      if (deniedNow(egress(), hostname, socket) === undefined) continue;
      socket.destroy();
      open.delete(socket);
      closed++;
    }
    return closed;
  };
  return { agent, closeDenied };
}

function deniedNow(policy: EgressPolicy, hostname: string, socket: Socket): string | undefined {
  const host = hostname.replace(/^\[|\]$/g, '');
  return policy.checkName(host) ?? (socket.remoteAddress === undefined ? undefined : policy.check(host, socket.remoteAddress));
}

// Records each connection; one whose address the policy denies by the time it is up (a
// reload during the handshake) is refused like any denied destination.
function trackedConnector(base: buildConnector.connector, egress: () => EgressPolicy, open: Map<Socket, string>): buildConnector.connector {
  return (options, callback) => {
    base(options, (...args: Parameters<buildConnector.Callback>) => {
      const [error, socket] = args;
      if (error !== null || socket === null) {
        callback(...args);
        return;
      }
      const denied = deniedNow(egress(), options.hostname, socket);
      if (denied !== undefined) {
        socket.destroy();
        callback(new EgressDeniedError(denied), null);
        return;
      }
      open.set(socket, options.hostname);
      socket.once('close', () => open.delete(socket));
      callback(null, socket);
    });
  };
}

// Literal IP hosts never reach `lookup`: check them before connecting.
function guardedConnector(base: buildConnector.connector, egress: () => EgressPolicy): buildConnector.connector {
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0) {
      const denied = egress().check(host, host);
      if (denied !== undefined) {
        callback(new EgressDeniedError(denied), null);
        return;
      }
    }
    base(options, callback);
  };
}
