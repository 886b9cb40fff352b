import type { IncomingHttpHeaders } from 'node:http';
import { context as otelContext, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { AttemptFacts, AttemptSpan, ChildSpan, RequestSpan, RequestSpanFacts, RequestTracer } from './tracing.ts';

// The OpenTelemetry JS SDK behind tracing.ts, loaded only when OTEL_TRACES_EXPORTER asks for
// it. Configuration is the SDK's own environment handling: the sampler (OTEL_TRACES_SAMPLER,
// _ARG), batch limits (OTEL_BSP_*), endpoint and headers (OTEL_EXPORTER_OTLP_[TRACES_]…),
// the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). Spans carry the GenAI
// semantic-convention attributes; prompt and completion text are never recorded.
// Parents are passed explicitly (no global context manager): the request's span lives on
// its RequestContext.

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (carrier: IncomingHttpHeaders) => Object.keys(carrier),
  get: (carrier: IncomingHttpHeaders, key: string) => carrier[key],
};

export async function createSdkTracer(env: NodeJS.ProcessEnv): Promise<RequestTracer> {
  const exporters: SpanExporter[] = [];
  for (const name of (env['OTEL_TRACES_EXPORTER'] ?? '').split(',').map((part) => part.trim().toLowerCase())) {
    if (name === '' || name === 'none') continue;
    if (name === 'console') exporters.push(new ConsoleSpanExporter());
    else if (name === 'otlp') exporters.push(await otlpExporter(env));
    else throw new Error(`OTEL_TRACES_EXPORTER=${name} is not supported; use otlp, console or none.`);
  }
  const resource = resourceFromAttributes({ 'service.name': 'aigateway' }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: exporters.map((exporter) => new BatchSpanProcessor(exporter)) });
  const tracer = provider.getTracer('aigateway');
  return {
    startRequest: (method, route, headers, gatewayTraceId) => new SdkRequestSpan(tracer, method, route, headers, gatewayTraceId),
    shutdown: () => provider.shutdown(),
  };
}

async function otlpExporter(env: NodeJS.ProcessEnv): Promise<SpanExporter> {
  const protocol = (env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'] ?? 'http/protobuf').trim().toLowerCase();
  if (protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter();
  }
  if (protocol === 'http/protobuf') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
    return new OTLPTraceExporter();
  }
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported; use http/protobuf or http/json (a Collector can bridge to gRPC).`);
}

class SdkRequestSpan implements RequestSpan {
  readonly traceId: string;
  readonly #span: Span;
  readonly #parent: Context;
  readonly #tracer: Tracer;
  readonly #open: Span[] = [];

  constructor(tracer: Tracer, method: string, route: string, headers: IncomingHttpHeaders, gatewayTraceId: string) {
    this.#tracer = tracer;
    const incoming = headers['traceparent'] === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, headerGetter);
    this.#span = tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'http.route': route, 'url.path': route, 'aigateway.trace_id': gatewayTraceId },
      },
      incoming,
    );
    this.#parent = trace.setSpan(incoming, this.#span);
    this.traceId = this.#span.spanContext().traceId;
  }

  startAttempt(facts: AttemptFacts): AttemptSpan {
    const name = facts.model === undefined ? `${facts.operation} ${facts.provider}` : `${facts.operation} ${facts.model}`;
    const span = this.#tracer.startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': facts.operation,
          'gen_ai.provider.name': facts.provider,
          ...(facts.model === undefined ? {} : { 'gen_ai.request.model': facts.model }),
          'aigateway.target': facts.targetPath,
          'aigateway.retry': facts.retry,
          ...(facts.retry > 0 ? { 'http.request.resend_count': facts.retry } : {}),
        },
      },
      this.#parent,
    );
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(otelContext.active(), span), carrier, { set: (target, key, value) => (target[key] = value) });
    const open = this.#open;
    let ended = false;
    return {
      traceparent: carrier['traceparent'] ?? '',
      end(status, errorCode) {
        if (ended) return;
        ended = true;
        if (status > 0) span.setAttribute('http.response.status_code', status);
        if (status >= 400 || errorCode !== undefined) {
          span.setAttribute('error.type', errorCode ?? String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
      keepOpen() {
        if (!ended) open.push(span);
        ended = true;
      },
    };
  }

  startChild(name: string, attributes: Readonly<Record<string, string | number | boolean>> = {}): ChildSpan {
    const span = this.#tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, this.#parent);
    return {
      end(more) {
        if (more !== undefined) for (const [key, value] of Object.entries(more)) if (value !== undefined) span.setAttribute(key, value);
        span.end();
      },
    };
  }

  end(facts: RequestSpanFacts): void {
    for (const span of this.#open.splice(0)) {
      if (facts.clientAborted) span.setAttribute('error.type', 'client_aborted');
      span.end();
    }
    const span = this.#span;
    const attributes: Record<string, string | number | boolean | undefined> = {
      'http.response.status_code': facts.status,
      'gen_ai.operation.name': facts.operation,
      'gen_ai.provider.name': facts.provider,
      'gen_ai.request.model': facts.requestModel,
      'gen_ai.response.model': facts.responseModel,
      'gen_ai.usage.input_tokens': facts.inputTokens,
      'gen_ai.usage.output_tokens': facts.outputTokens,
      'gen_ai.server.time_to_first_token': facts.ttftMs === undefined ? undefined : facts.ttftMs / 1000,
      'aigateway.cost_usd': facts.costUsd,
      'aigateway.cache_status': facts.cacheStatus,
      'aigateway.retries': facts.retries,
    };
    for (const [key, value] of Object.entries(attributes)) if (value !== undefined) span.setAttribute(key, value);
    if (facts.status >= 500 || facts.clientAborted || facts.errorCode !== undefined) {
      span.setAttribute('error.type', facts.clientAborted ? 'client_aborted' : (facts.errorCode ?? String(facts.status)));
    }
    if (facts.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}
