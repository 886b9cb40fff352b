import type { IncomingHttpHeaders } from 'node:http';
import type { RequestSpan } from '../request-span.ts';

// The span contracts live beside the request context (it holds the span); kept here for callers.
export type { AttemptFacts, AttemptSpan, ChildSpan, RequestSpan, RequestSpanFacts } from '../request-span.ts';

// OpenTelemetry tracing, switched on by the standard environment variables alone
// (OTEL_TRACES_EXPORTER=otlp|console, OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER…). This module imports no OpenTelemetry code: the SDK
// (tracing-sdk.ts) is loaded only when tracing is on, so `serve` without it loads nothing
// and the request path pays one undefined check.

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
