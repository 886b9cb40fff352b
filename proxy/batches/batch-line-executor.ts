import type { GatewayHost } from '../gateway-host.ts';
import { errorLine, isSuccessStatus, responseLine } from './batch-output.ts';
import type { LineExecution } from './batch-runner.ts';
import type { ClaimedLine } from './batch-store.ts';

// One batch line through the gateway's own pipeline (host.inject): the creating request's
// headers, so its API key, routing config (retries, fallbacks), rate limits and every other
// policy apply to each line exactly as to a direct call.

const MAX_TRACE_ID = 256;

export function injectLineExecutor(host: Pick<GatewayHost, 'inject'>): (line: ClaimedLine) => Promise<LineExecution> {
  return async (line) => {
    const traceId = `${line.batchId}:${line.customId}`.slice(0, MAX_TRACE_ID);
    let answer: Awaited<ReturnType<GatewayHost['inject']>>;
    try {
      answer = await host.inject({
        method: 'POST',
        url: line.request.url,
        headers: { ...line.headers, 'content-type': 'application/json', 'x-gateway-trace-id': traceId },
        body: JSON.stringify(line.request.body),
      });
    } catch (error) {
      // The server began to close after the line was claimed: it never ran, so it goes back.
      if ((error as { code?: unknown }).code === 'FST_ERR_REOPENED_CLOSE_SERVER') return { notRun: true };
      return { succeeded: false, resultLine: errorLine(line.customId, { code: 'gateway_error', message: (error as Error).message }) };
    }
    if (isClosingAnswer(answer.statusCode, answer.body)) return { notRun: true };
    const requestId = answer.headers['x-request-id'];
    return {
      succeeded: isSuccessStatus(answer.statusCode),
      resultLine: responseLine(line.customId, {
        statusCode: answer.statusCode,
        requestId: typeof requestId === 'string' ? requestId : traceId,
        bodyText: answer.body,
      }),
    };
  };
}

/**
 * Fastify's own 503 for a request that arrived while the server closes: it never reached a
 * route, so the line did not run and goes back to the queue (our errors are OpenAI-shaped,
 * with an object `error`; this one has a string).
 */
function isClosingAnswer(status: number, body: string): boolean {
  if (status !== 503) return false;
  try {
    const parsed = JSON.parse(body) as { error?: unknown; statusCode?: unknown };
    return typeof parsed.error === 'string' && parsed.statusCode === 503;
  } catch {
    return false;
  }
}
