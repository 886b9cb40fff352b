import type { GatewayApiKey, GatewayState } from './config/gateway-state.ts';

// What the gateway knows about one request, gathered as it moves along the path and
// read once at the end by metrics and the request log.

export interface RequestContext {
  readonly traceId: string;
  /** process.hrtime.bigint() at arrival. */
  readonly startedAt: bigint;
  /** Date.now() at arrival (for records and the log store). */
  readonly startedAtMs: number;
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
  /** The provider's usage for this answer, when it reported one. */
  usage: { prompt: number | undefined; completion: number | undefined; total: number | undefined } | undefined;
  /** When the first upstream request was sent, and when the last upstream answer ended. */
  upstreamStartedAt: bigint | undefined;
  upstreamDoneAt: bigint | undefined;
  /** ms from arrival to the first chunk of a streamed answer. */
  ttftMs: number | undefined;
  cacheStatus: string | undefined;
  guardrailVerdict: string | undefined;
}

export function newRequestContext(traceId: string, state: GatewayState): RequestContext {
  return {
    traceId,
    startedAt: process.hrtime.bigint(),
    startedAtMs: Date.now(),
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
    usage: undefined,
    upstreamStartedAt: undefined,
    upstreamDoneAt: undefined,
    ttftMs: undefined,
    cacheStatus: undefined,
    guardrailVerdict: undefined,
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    gateway: RequestContext;
  }
}
