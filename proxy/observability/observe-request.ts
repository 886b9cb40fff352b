import type { GatewayState } from '../config/gateway-state.ts';
import { catalogNames } from '../providers/provider-catalog.ts';
import type { RequestContext } from '../request-context.ts';
import { statusClass, type GatewayMetrics } from './gateway-metrics.ts';
import { counterSeries, histogramSeries } from './metric-series.ts';

// Metrics for one finished request, recorded after the response has gone out. Label sets
// repeat (a handful of routes × providers × models), so each one's series are resolved
// once and kept (metric-series.ts: no label hashing or validation per observation).

export const OPERATIONS: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'chat',
  '/v1/messages': 'chat',
  '/v1/completions': 'text_completion',
  '/v1/embeddings': 'embeddings',
  '/v1/responses': 'responses',
};

type Observe = (value: number) => void;
type Increment = (value?: number) => void;

interface RouteSeries {
  requests: Increment;
  duration: Observe;
  overhead: Observe;
}

interface GenAiSeries {
  duration: Observe;
  ttft: Observe;
  input: Observe;
  output: Observe;
}

interface CostSeries {
  cost: Increment;
  unpriced: Increment;
}

const MAX_CACHED = 2048;
const costSeries = new WeakMap<GatewayMetrics, Map<string, CostSeries>>();
const routeSeries = new WeakMap<GatewayMetrics, Map<string, RouteSeries>>();
const genAiSeries = new WeakMap<GatewayMetrics, Map<string, GenAiSeries>>();

function cached<T>(store: WeakMap<GatewayMetrics, Map<string, T>>, metrics: GatewayMetrics, key: string, build: () => T): T {
  let map = store.get(metrics);
  if (map === undefined) {
    map = new Map();
    store.set(metrics, map);
  }
  let value = map.get(key);
  if (value === undefined) {
    value = build();
    if (map.size < MAX_CACHED) map.set(key, value);
  }
  return value;
}

// Label values a request can only name, never invent: provider names are the catalog's and
// the saved providers'; a name chosen with a custom host counts as `custom`. Models named
// in saved configs are known; others share BoundedLabel's budget, then `other`.
interface KnownLabels {
  readonly providers: ReadonlySet<string>;
  readonly models: ReadonlySet<string>;
}

const CATALOG = new Set(catalogNames());
const knownByState = new WeakMap<GatewayState, KnownLabels>();

export function knownLabels(state: GatewayState): KnownLabels {
  let known = knownByState.get(state);
  if (known === undefined) {
    const providers = new Set(CATALOG);
    for (const saved of state.providersBySlug.values()) providers.add(saved.provider);
    const models = new Set<string>();
    const collect = (node: { settings: { override_params?: Record<string, unknown> | undefined }; children: readonly unknown[] }): void => {
      const model = node.settings.override_params?.['model'];
      if (typeof model === 'string') models.add(model);
      for (const child of node.children) collect(child as typeof node);
    };
    for (const saved of state.configs.values()) collect(saved.plan);
    known = { providers, models };
    knownByState.set(state, known);
  }
  return known;
}

/** The provider as a label value: known names, `custom` for a name the request made up. */
export function providerLabel(provider: string | undefined, state: GatewayState): string {
  if (provider === undefined) return 'none';
  return knownLabels(state).providers.has(provider) ? provider : 'custom';
}

export function observeRequest(metrics: GatewayMetrics, context: RequestContext, route: string, status: number): void {
  const now = process.hrtime.bigint();
  const seconds = Number(now - context.startedAt) / 1e9;
  const provider = providerLabel(context.provider, context.state);
  const klass = statusClass(status);
  const series = cached(routeSeries, metrics, `${route}\u0000${provider}\u0000${klass}`, () => {
    const labels = { route, provider, status_class: klass };
    return {
      requests: counterSeries(metrics.requests, labels),
      duration: histogramSeries(metrics.requestDuration, labels),
      overhead: histogramSeries(metrics.gatewayOverhead, { route }),
    };
  });
  series.requests();
  series.duration(seconds);

  const operation = OPERATIONS[route];
  if (operation === undefined || context.provider === undefined) return;
  const model = metrics.modelLabel.of(context.model, knownLabels(context.state).models);
  const errorType = status >= 400 ? String(status) : '';
  const genAi = cached(genAiSeries, metrics, `${operation}\u0000${provider}\u0000${model}\u0000${errorType}`, () => {
    const labels = { gen_ai_operation_name: operation, gen_ai_system: provider, gen_ai_request_model: model };
    return {
      duration: histogramSeries(metrics.genAiDuration, { ...labels, error_type: errorType }),
      ttft: histogramSeries(metrics.genAiTimeToFirstToken, labels),
      input: histogramSeries(metrics.genAiTokenUsage, { ...labels, gen_ai_token_type: 'input' }),
      output: histogramSeries(metrics.genAiTokenUsage, { ...labels, gen_ai_token_type: 'output' }),
    };
  });
  genAi.duration(seconds);
  if (context.ttftMs !== undefined) genAi.ttft(context.ttftMs / 1000);
  const usage = context.usage;
  if (usage?.prompt !== undefined) genAi.input(usage.prompt);
  if (usage?.completion !== undefined) genAi.output(usage.completion);
  if (context.upstreamStartedAt !== undefined) {
    // Overhead: before the first upstream request, and after the last upstream answer ended.
    const before = context.upstreamStartedAt - context.startedAt;
    const after = context.upstreamDoneAt === undefined ? 0n : now - context.upstreamDoneAt;
    series.overhead(Number(before + (after > 0n ? after : 0n)) / 1e9);
  }
}

/** The request's cost (USD) on aigateway_cost_usd_total; usage without a known price is counted as unpriced. */
export function observeCost(metrics: GatewayMetrics, context: RequestContext): void {
  if (context.usage === undefined || context.provider === undefined) return;
  const cost = context.costUsd;
  if (cost === 0) return;
  const provider = providerLabel(context.provider, context.state);
  const model = metrics.modelLabel.of(context.model, knownLabels(context.state).models);
  const series = cached(costSeries, metrics, `${provider}\u0000${model}`, () => ({
    cost: counterSeries(metrics.costUsd, { provider, model }),
    unpriced: counterSeries(metrics.unpricedRequests, { provider, model }),
  }));
  if (cost === undefined) series.unpriced();
  else series.cost(cost);
}
