import type { GatewayApiKey, GatewayState } from './config/gateway-state.ts';

// What the gateway knows about one request, gathered as it moves along the path and
// read once at the end by metrics and the request log.

export interface RequestContext {
  readonly traceId: string;
  /** process.hrtime.bigint() at arrival. */
  readonly startedAt: bigint;
  /** The snapshot captured on entry; used to the end, even across a reload. */
  readonly state: GatewayState;
  apiKey: GatewayApiKey | undefined;
  metadata: Readonly<Record<string, unknown>> | undefined;
  configId: string | undefined;
  provider: string | undefined;
  model: string | undefined;
  targetPath: string | undefined;
  retries: number;
  /** The client went away before the answer was complete. */
  clientAborted: boolean;
  errorCode: string | undefined;
}

export function newRequestContext(traceId: string, state: GatewayState): RequestContext {
  return {
    traceId,
    startedAt: process.hrtime.bigint(),
    state,
    apiKey: undefined,
    metadata: undefined,
    configId: undefined,
    provider: undefined,
    model: undefined,
    targetPath: undefined,
    retries: 0,
    clientAborted: false,
    errorCode: undefined,
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    gateway: RequestContext;
  }
}
