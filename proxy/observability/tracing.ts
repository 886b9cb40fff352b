import type { IncomingHttpHeaders } from 'node:http';

// OpenTelemetry tracing, switched on by the standard environment variables alone
// (OTEL_TRACES_EXPORTER=otlp|console, OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER…). This module imports no OpenTelemetry code: the SDK
// (tracing-sdk.ts) is loaded only when tracing is on, so `serve` without it loads nothing
// and the request path pays one undefined check.

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

export interface RequestTracer {
  /** Starts the server span, continuing the caller's W3C `traceparent` when valid. */
  startRequest(method: string, route: string, headers: IncomingHttpHeaders, gatewayTraceId: string): RequestSpan;
  /** Flushes and stops the exporter (on shutdown). */
  shutdown(): Promise<void>;
}

/** Tracing is on when OTEL_TRACES_EXPORTER names an exporter and the SDK is not disabled. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  const exporter = env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase();
  if (exporter === undefined || exporter === '' || exporter === 'none') return false;
  return env['OTEL_SDK_DISABLED']?.trim().toLowerCase() !== 'true';
}

/** The tracer the environment asks for, or undefined (nothing loaded) when tracing is off. */
export async function tracerFromEnvironment(env: NodeJS.ProcessEnv = process.env): Promise<RequestTracer | undefined> {
  if (!tracingRequested(env)) return undefined;
  const { createSdkTracer } = await import('./tracing-sdk.ts');
  return createSdkTracer(env);
}

/** The process's tracer, decided once from the environment at start. */
export const environmentTracer: RequestTracer | undefined = await tracerFromEnvironment();
