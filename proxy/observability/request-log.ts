import { pino, type Logger, type DestinationStream } from 'pino';
import type { RequestContext } from '../request-context.ts';

// One JSON line per request, written asynchronously (pino's sonic-boom) so logging stays
// off the response's critical path. Only known fields are logged — never headers or
// bodies — and the redact list is a second belt for anything that slips into `err`.

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'key',
  'headers',
  '*.headers',
];

export interface LoggerOptions {
  level?: string;
  /** A file path, or a stream (tests); default stdout. */
  destination?: string | DestinationStream;
}

export function createGatewayLogger(options: LoggerOptions = {}): Logger {
  const destination =
    typeof options.destination === 'object'
      ? options.destination
      : pino.destination({ dest: options.destination ?? 1, sync: false, mkdir: true });
  return pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    destination,
  );
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
