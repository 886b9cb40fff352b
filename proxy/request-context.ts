import type { GatewayApiKey, GatewayState } from './config/gateway-state.ts';
import type { RequestSpan } from './request-span.ts';
import type { AnswerUsage } from './ratelimit/usage-tap.ts';

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
  /** The model sent to the provider (override_params applied); on a cache hit, the one the stored answer was asked for. */
  model: string | undefined;
  /** The model the client asked for. */
  modelRequested: string | undefined;
  /** A cache hit: the provider whose stored answer was served (`provider` stays unset: it was not called). */
  cacheProvider: string | undefined;
  targetPath: string | undefined;
  retries: number;
  /** The strategy walk's attempts, in order (set when the walk ran). */
  attempts: AttemptRecord[] | undefined;
  /** The client went away before the answer was complete. */
  clientAborted: boolean;
  errorCode: string | undefined;
  /** The provider's usage for this answer, when it reported one (or the gateway's estimate, see usageEstimated). */
  usage: ContextUsage | undefined;
  /** usage was estimated by the gateway (a stream the client left before the provider reported usage). */
  usageEstimated: boolean;
  /** The model the provider says answered (e.g. a dated snapshot of the requested alias). */
  responseModel: string | undefined;
  /** Content-bearing stream events relayed so far (the estimate's output side). */
  streamEvents: number;
  /** Bytes of the request body sent upstream (the estimate's input side). */
  requestBytes: number;
  /** Charges a token limit; set when the request was admitted against token windows. Called once, at the end. */
  chargeTokens: ((tokens: number) => void) | undefined;
  /** Settles the request's budget reservations to what it spent; set when a usage-limit policy applied. Called once, at the end. */
  settleBudget: ((spend: { costUsd: number | undefined; tokens: number }) => void) | undefined;
  /** USD, set at the end from the price table; undefined when the model has no known price. */
  costUsd: number | undefined;
  /** The request's OpenTelemetry span when tracing is on. */
  span: RequestSpan | undefined;
  /** The end of the request was accounted (record, log, metrics): exactly once. */
  finished: boolean;
  /** When the first upstream request was sent, and when the last upstream answer ended. */
  upstreamStartedAt: bigint | undefined;
  upstreamDoneAt: bigint | undefined;
  /** ms from arrival to the first chunk of a streamed answer. */
  ttftMs: number | undefined;
  cacheStatus: string | undefined;
  guardrailVerdict: string | undefined;
}

/** One upstream attempt, or a target skipped without one. */
export interface AttemptRecord {
  /** The target's path in the config (`config.targets[1]`). */
  readonly target: string;
  readonly provider: string | undefined;
  readonly model: string | undefined;
  /** The upstream status, or the gateway's for an error it made (timeout 408, unreachable 502); null when skipped. */
  readonly status: number | null;
  readonly durationMs: number;
  readonly errorCode: string | undefined;
  /** Why the target was not called: its circuit is open, or it could not be resolved. */
  readonly skipped?: 'circuit_open' | 'unresolved' | undefined;
}

/** The provider's usage for one answer (the usage tap's reading of it). */
export type ContextUsage = AnswerUsage;

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
    modelRequested: undefined,
    cacheProvider: undefined,
    targetPath: undefined,
    retries: 0,
    attempts: undefined,
    clientAborted: false,
    errorCode: undefined,
    usage: undefined,
    usageEstimated: false,
    responseModel: undefined,
    streamEvents: 0,
    requestBytes: 0,
    chargeTokens: undefined,
    settleBudget: undefined,
    costUsd: undefined,
    span: undefined,
    finished: false,
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
