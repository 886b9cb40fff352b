import type { AttemptRecord } from '../request-context.ts';
import type { RequestExchange } from './request-exchange.ts';

// Kept here for callers; the type lives with the request context, whose `attempts` it is.
export type { AttemptRecord } from '../request-context.ts';

// One request's facts, as the request log store keeps them (issue: observability). Built
// once per request after the response has gone out, off the critical path.

export interface RequestRecord {
  /** Unique id of this record (UUID); empty when no store takes the record (the log line alone reads it). */
  readonly id: string;
  readonly traceId: string;
  /** Unix epoch milliseconds at arrival. */
  readonly startedAt: number;
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly latencyMs: number;
  /** Time to the first byte of the answer (streams: first chunk), when known. */
  readonly ttftMs: number | undefined;
  readonly apiKeyId: string | undefined;
  readonly workspace: string | undefined;
  readonly configId: string | undefined;
  readonly targetPath: string | undefined;
  /** The provider that answered (for a cache hit: the one whose answer was stored). */
  readonly provider: string | undefined;
  /** The model the provider was asked for (override_params applied), cache hits included. */
  readonly model: string | undefined;
  /** The model the client asked for. */
  readonly modelRequested?: string | undefined;
  /** Every attempt of the strategy walk in order (fallbacks, retries, skipped targets); absent when no target was tried. */
  readonly attempts?: readonly AttemptRecord[] | undefined;
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  readonly promptTokens: number | undefined;
  readonly completionTokens: number | undefined;
  readonly totalTokens: number | undefined;
  /** Prompt tokens served from the provider's prompt cache (part of promptTokens). */
  readonly cachedTokens?: number | undefined;
  /** Completion tokens spent on reasoning (part of completionTokens). */
  readonly reasoningTokens?: number | undefined;
  /** The token counts are the gateway's estimate (the client left before the provider reported usage). */
  readonly usageEstimated?: boolean | undefined;
  /** USD from the price table; undefined when the model has no known price (never 0 for unknown). */
  readonly costUsd?: number | undefined;
  /** The OpenTelemetry trace id (32 hex) when tracing is on: the log line leads to its trace. */
  readonly otelTraceId?: string | undefined;
  readonly cacheStatus: string | undefined;
  readonly retries: number;
  /** Guardrail outcome summary (e.g. `pass`, `fail`, `deny`), when hooks ran. */
  readonly guardrailVerdict: string | undefined;
  readonly errorCode: string | undefined;
  /** Headers and bodies, only with serve --log-bodies (proxy/logs/exchange-capture.ts); stores keep them apart. */
  readonly exchange?: RequestExchange | undefined;
}

/** Receives every finished request; must return at once (queue, never block). */
export type RequestRecordSink = (record: RequestRecord) => void;
