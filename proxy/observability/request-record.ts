// One request's facts, as the request log store keeps them (issue: observability). Built
// once per request after the response has gone out, off the critical path.

export interface RequestRecord {
  /** Unique id of this record (UUID). */
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
  readonly provider: string | undefined;
  readonly model: string | undefined;
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  readonly promptTokens: number | undefined;
  readonly completionTokens: number | undefined;
  readonly totalTokens: number | undefined;
  readonly cacheStatus: string | undefined;
  readonly retries: number;
  /** Guardrail outcome summary (e.g. `pass`, `fail`, `deny`), when hooks ran. */
  readonly guardrailVerdict: string | undefined;
  readonly errorCode: string | undefined;
}

/** Receives every finished request; must return at once (queue, never block). */
export type RequestRecordSink = (record: RequestRecord) => void;
