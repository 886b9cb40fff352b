import type { RequestContext } from '../request-context.ts';
import { statusClass, type GatewayMetrics } from './gateway-metrics.ts';

// Metrics for one finished request, recorded after the response has gone out.

const OPERATIONS: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'text_completion',
  '/v1/embeddings': 'embeddings',
  '/v1/responses': 'responses',
};

export function observeRequest(metrics: GatewayMetrics, context: RequestContext, route: string, status: number): void {
  const now = process.hrtime.bigint();
  const seconds = Number(now - context.startedAt) / 1e9;
  const labels = { route, provider: context.provider ?? 'none', status_class: statusClass(status) };
  metrics.requests.inc(labels);
  metrics.requestDuration.observe(labels, seconds);

  const operation = OPERATIONS[route];
  if (operation === undefined || context.provider === undefined) return;
  const genAi = {
    gen_ai_operation_name: operation,
    gen_ai_system: context.provider,
    gen_ai_request_model: metrics.modelLabel.of(context.model),
  };
  metrics.genAiDuration.observe({ ...genAi, error_type: status >= 400 ? String(status) : '' }, seconds);
  if (context.ttftMs !== undefined) metrics.genAiTimeToFirstToken.observe(genAi, context.ttftMs / 1000);
  const usage = context.usage;
  if (usage?.prompt !== undefined) metrics.genAiTokenUsage.observe({ ...genAi, gen_ai_token_type: 'input' }, usage.prompt);
  if (usage?.completion !== undefined) metrics.genAiTokenUsage.observe({ ...genAi, gen_ai_token_type: 'output' }, usage.completion);
  if (context.upstreamStartedAt !== undefined) {
    // Overhead: before the first upstream request, and after the last upstream answer ended.
    const before = context.upstreamStartedAt - context.startedAt;
    const after = context.upstreamDoneAt === undefined ? 0n : now - context.upstreamDoneAt;
    metrics.gatewayOverhead.observe({ route }, Number(before + (after > 0n ? after : 0n)) / 1e9);
  }
}
