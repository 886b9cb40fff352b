import { Agent, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { UpstreamRequestPlan } from '../providers/provider-adapter.ts';

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

export interface UpstreamCall {
  readonly plan: UpstreamRequestPlan;
  /** The client's bytes, forwarded when the plan carries no body of its own. */
  readonly clientBody: Buffer | undefined;
  readonly signal: AbortSignal;
}

/** Sends one upstream request; network failures become gateway errors (502/504). */
export async function sendUpstream(dispatcher: Dispatcher, call: UpstreamCall, provider: string): Promise<Dispatcher.ResponseData> {
  const url = new URL(call.plan.url);
  try {
    return await dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: call.plan.method,
      headers: { ...call.plan.headers, 'accept-encoding': 'identity' },
      body: call.plan.body ?? call.clientBody,
      signal: call.signal,
    });
  } catch (error) {
    throw upstreamFailure(error, provider);
  }
}

export function upstreamFailure(error: unknown, provider: string): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = (error as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new GatewayError('AIGW_ERR_UPSTREAM_TIMEOUT', `${provider} did not answer in time.`, { cause: error });
  }
  return new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `Could not reach ${provider}: ${describe(error)}`, { cause: error });
}

function describe(error: unknown): string {
  const code = (error as { code?: string }).code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : 'network error';
}
