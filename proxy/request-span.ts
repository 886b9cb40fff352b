// The contract of one request's trace span, beside the request context that holds it.
// The tracer that makes them (observability/tracing.ts, the SDK in tracing-sdk.ts) is a
// feature above; the context and the stages only see this interface.

/** One request's server span and the spans under it. */
export interface RequestSpan {
  /** The OTel trace id (32 hex digits), written to the request log. */
  readonly traceId: string;
  /** A client span for one upstream attempt; its `traceparent` goes to the provider. */
  startAttempt(facts: AttemptFacts): AttemptSpan;
  /** An internal span under the request (guardrails, cache). */
  startChild(name: string, attributes?: Readonly<Record<string, string | number | boolean>>): ChildSpan;
  /** Ends the request span (and an upstream stream's span still open) with the request's facts. */
  end(facts: RequestSpanFacts): void;
}

export interface AttemptFacts {
  readonly provider: string;
  readonly model: string | undefined;
  readonly operation: string;
  /** 0 for the first try of a target, 1… for its retries. */
  readonly retry: number;
  readonly targetPath: string;
}

export interface AttemptSpan {
  readonly traceparent: string;
  /** Ends the attempt with the provider's status (or the gateway's error for a network failure). */
  end(status: number, errorCode?: string): void;
  /** The attempt's answer is being relayed: the span ends with the request. */
  keepOpen(): void;
}

export interface ChildSpan {
  end(attributes?: Readonly<Record<string, string | number | boolean | undefined>>): void;
}

export interface RequestSpanFacts {
  readonly status: number;
  readonly route: string;
  readonly operation: string | undefined;
  readonly provider: string | undefined;
  readonly requestModel: string | undefined;
  readonly responseModel: string | undefined;
  readonly inputTokens: number | undefined;
  readonly outputTokens: number | undefined;
  readonly ttftMs: number | undefined;
  readonly costUsd: number | undefined;
  readonly cacheStatus: string | undefined;
  readonly errorCode: string | undefined;
  readonly clientAborted: boolean;
  readonly retries: number;
}
