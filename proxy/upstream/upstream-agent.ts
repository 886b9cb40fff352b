import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { EgressDeniedError, guardedLookup, type EgressPolicy } from './egress-policy.ts';

// One undici Agent for the process: it keeps a keep-alive pool per upstream origin, and it
// lives outside the config snapshot so a reload never drops warm connections. Every new
// connection passes the egress policy of the snapshot in force at connect time.

export interface UpstreamAgentOptions {
  /** Time to the response headers (ms); a routing config's request_timeout is tighter. */
  headersTimeoutMs?: number;
  /** Idle time between body chunks (ms); streams of slow models need it long. */
  bodyTimeoutMs?: number;
  connectTimeoutMs?: number;
  connectionsPerOrigin?: number;
  /** The egress policy to apply (read at each connect, so reloads take effect). */
  egress?: () => EgressPolicy;
}

export function createUpstreamAgent(options: UpstreamAgentOptions = {}): Agent {
  const timeout = options.connectTimeoutMs ?? 10_000;
  const egress = options.egress;
  const connect =
    egress === undefined
      ? { timeout }
      : guardedConnector(buildConnector({ timeout, lookup: guardedLookup(egress) } as buildConnector.BuildOptions), egress);
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    headersTimeout: options.headersTimeoutMs ?? 600_000,
    bodyTimeout: options.bodyTimeoutMs ?? 600_000,
    connections: options.connectionsPerOrigin ?? 512,
    connect,
  });
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
