import { pino, type Logger, type DestinationStream } from 'pino';
import type { RequestContext } from '../request-context.ts';

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

export function logRequest(logger: Logger, context: RequestContext, method: string, route: string, status: number): void {
  const latencyMs = Number(process.hrtime.bigint() - context.startedAt) / 1e6;
  logger.info(
    {
      trace_id: context.traceId,
      method,
      route,
      status: context.clientAborted ? 499 : status,
      latency_ms: Math.round(latencyMs * 1000) / 1000,
      api_key_id: context.apiKey?.id,
      workspace: context.apiKey?.workspace,
      config_id: context.configId,
      provider: context.provider,
      model: context.model,
      target: context.targetPath,
      retries: context.retries,
      ttft_ms: context.ttftMs === undefined ? undefined : Math.round(context.ttftMs * 1000) / 1000,
      prompt_tokens: context.usage?.prompt,
      completion_tokens: context.usage?.completion,
      total_tokens: context.usage?.total,
      cache_status: context.cacheStatus,
      guardrail_verdict: context.guardrailVerdict,
      metadata: context.metadata,
      error_code: context.errorCode,
      client_aborted: context.clientAborted || undefined,
    },
    'request',
  );
}
