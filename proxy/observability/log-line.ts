import { pino, type Logger, type DestinationStream } from 'pino';
import type { RequestRecord } from './request-record.ts';

// One JSON line per request, written asynchronously (pino's sonic-boom) so logging stays
// off the response's critical path. Only known fields are logged — never headers or bodies
// (a test scans the log for secrets) — so no per-line redaction pass is needed; lines are
// buffered (4 KiB or 1 s, whichever first) so one write(2) carries many of them.

/** ISO timestamps are costly to format per line; one string per second is enough. */
let isoSecond = 0;
let isoPrefix = '';
function cachedIsoTime(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 19);
  }
  return `,"time":"${isoPrefix}.${String(now % 1000).padStart(3, '0')}Z"`;
}

export interface LoggerOptions {
  level?: string;
  /** A file path, or a stream (tests); default stdout. */
  destination?: string | DestinationStream;
}

export function createGatewayLogger(options: LoggerOptions = {}): Logger {
  let destination: DestinationStream;
  if (typeof options.destination === 'object') {
    destination = options.destination;
  } else {
    const boom = pino.destination({ dest: options.destination ?? 1, sync: false, mkdir: true, minLength: 4096 });
    setInterval(() => boom.flush(), 1000).unref();
    destination = boom;
  }
  return pino({ level: options.level ?? 'info', base: undefined, timestamp: cachedIsoTime }, destination);
}

/** The request's log line, from the same record the request log store keeps. */
export function logRequest(logger: Logger, record: RequestRecord, clientAborted: boolean): void {
  logger.info(
    {
      trace_id: record.traceId,
      method: record.method,
      route: record.route,
      status: record.status,
      latency_ms: Math.round(record.latencyMs * 1000) / 1000,
      api_key_id: record.apiKeyId,
      workspace: record.workspace,
      config_id: record.configId,
      provider: record.provider,
      model: record.model,
      target: record.targetPath,
      retries: record.retries,
      ttft_ms: record.ttftMs === undefined ? undefined : Math.round(record.ttftMs * 1000) / 1000,
      prompt_tokens: record.promptTokens,
      completion_tokens: record.completionTokens,
      total_tokens: record.totalTokens,
      cached_tokens: record.cachedTokens,
      reasoning_tokens: record.reasoningTokens,
      usage_estimated: record.usageEstimated,
      cost_usd: record.costUsd,
      otel_trace_id: record.otelTraceId,
      cache_status: record.cacheStatus,
      guardrail_verdict: record.guardrailVerdict,
      metadata: record.metadata,
      error_code: record.errorCode,
      client_aborted: clientAborted || undefined,
    },
    'request',
  );
}
