import { Agent } from 'undici';

// One undici Agent for the process: it keeps a keep-alive pool per upstream origin, and it
// lives outside the config snapshot so a reload never drops warm connections.

export interface UpstreamAgentOptions {
  /** Time to the response headers (ms); a routing config's request_timeout is tighter. */
  headersTimeoutMs?: number;
  /** Idle time between body chunks (ms); streams of slow models need it long. */
  bodyTimeoutMs?: number;
  connectTimeoutMs?: number;
  connectionsPerOrigin?: number;
}

export function createUpstreamAgent(options: UpstreamAgentOptions = {}): Agent {
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    headersTimeout: options.headersTimeoutMs ?? 600_000,
    bodyTimeout: options.bodyTimeoutMs ?? 600_000,
    connections: options.connectionsPerOrigin ?? 512,
    connect: { timeout: options.connectTimeoutMs ?? 10_000 },
  });
}
