import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { loadStateFromTexts } from '../../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { createGatewayMetrics, statusClass, type GatewayMetrics } from '../../../proxy/observability/gateway-metrics.ts';
import { knownLabels, observeRequest, OPERATIONS, providerLabel } from '../../../proxy/observability/observe-request.ts';
import { newRequestContext, type RequestContext } from '../../../proxy/request-context.ts';

// observeRequest finds its series through maps kept per label value; the exposition must be
// what plain prom-client calls, label set by label set, make of the same requests.

const loaded = loadStateFromTexts({ state: 'providers:\n  - slug: mine\n    provider: openai\n    apiKey: sk-x\nconfigs:\n  - id: c\n    config:\n      provider: "@mine"\n      override_params: { model: known-model }\n' }, {}, BUILTIN_GUARDRAIL_COMPILER);
assert.ok(loaded.ok, JSON.stringify(loaded));
const state = loaded.state;

/** The rules, spelled out with prom-client's own API. */
function reference(metrics: GatewayMetrics, context: RequestContext, route: string, status: number, now: bigint): void {
  const seconds = Number(now - context.startedAt) / 1e9;
  const provider = providerLabel(context.provider, state);
  metrics.requests.labels({ route, provider, status_class: statusClass(status) }).inc();
  metrics.requestDuration.labels({ route, provider, status_class: statusClass(status) }).observe(seconds);
  if (context.provider === undefined) return;
  const operation = OPERATIONS[route];
  const costed = context.usage !== undefined && context.costUsd !== 0;
  if (operation === undefined && !costed) return;
  const model = metrics.modelLabel.of(context.model, knownLabels(state).models);
  if (operation !== undefined) {
    const labels = { gen_ai_operation_name: operation, gen_ai_system: provider, gen_ai_request_model: model };
    metrics.genAiDuration.labels({ ...labels, error_type: status >= 400 ? String(status) : '' }).observe(seconds);
    if (context.ttftMs !== undefined) metrics.genAiTimeToFirstToken.labels(labels).observe(context.ttftMs / 1000);
    if (context.usage?.prompt !== undefined) metrics.genAiTokenUsage.labels({ ...labels, gen_ai_token_type: 'input' }).observe(context.usage.prompt);
    if (context.usage?.completion !== undefined) metrics.genAiTokenUsage.labels({ ...labels, gen_ai_token_type: 'output' }).observe(context.usage.completion);
    if (context.upstreamStartedAt !== undefined) {
      const after = context.upstreamDoneAt === undefined ? 0n : now - context.upstreamDoneAt;
      metrics.gatewayOverhead.labels({ route }).observe(Number(context.upstreamStartedAt - context.startedAt + (after > 0n ? after : 0n)) / 1e9);
    }
  }
  if (costed) {
    if (context.costUsd === undefined) metrics.unpricedRequests.labels({ provider, model }).inc();
    else metrics.costUsd.labels({ provider, model }).inc(context.costUsd);
  }
}

const aRequest = fc.record({
  route: fc.constantFrom('/v1/chat/completions', '/v1/messages', '/v1/embeddings', '/v1/responses', '/v1/models', 'unmatched'),
  status: fc.constantFrom(101, 200, 201, 304, 400, 404, 429, 499, 500, 502),
  provider: fc.option(fc.constantFrom('openai', 'anthropic', 'made-up'), { nil: undefined }),
  model: fc.option(fc.constantFrom('gpt-4o-mini', 'known-model', 'm1', 'm2', 'm3', '', 'x'.repeat(129)), { nil: undefined }),
  usage: fc.option(fc.record({ prompt: fc.option(fc.nat(70_000), { nil: undefined }), completion: fc.option(fc.nat(70_000), { nil: undefined }), total: fc.constant(undefined) }), { nil: undefined }),
  costUsd: fc.option(fc.constantFrom(0, 0.5, 1e-6), { nil: undefined }),
  ttftMs: fc.option(fc.double({ min: 0, max: 70_000, noNaN: true }), { nil: undefined }),
  elapsedUs: fc.nat(400_000_000),
  upstream: fc.option(fc.tuple(fc.nat(1_000_000), fc.option(fc.nat(400_000_000), { nil: undefined })), { nil: undefined }),
});

test('the exposition is what prom-client makes of the same observations', async () => {
  await fc.assert(fc.asyncProperty(fc.array(aRequest, { maxLength: 80 }), async (requests) => {
    const fast = createGatewayMetrics({ defaultMetrics: false });
    const slow = createGatewayMetrics({ defaultMetrics: false });
    for (const request of requests) {
      const context = newRequestContext('t', state);
      Object.assign(context, { provider: request.provider, model: request.model, usage: request.usage, costUsd: request.costUsd, ttftMs: request.ttftMs });
      if (request.upstream !== undefined) {
        context.upstreamStartedAt = context.startedAt + BigInt(request.upstream[0]) * 1000n;
        if (request.upstream[1] !== undefined) context.upstreamDoneAt = context.startedAt + BigInt(request.upstream[1]) * 1000n;
      }
      const now = context.startedAt + BigInt(request.elapsedUs) * 1000n;
      observeRequest(fast, context, request.route, request.status, now);
      reference(slow, context, request.route, request.status, now);
    }
    assert.equal(await fast.registry.metrics(), await slow.registry.metrics());
  }), { numRuns: 300 });
});
