import type { GatewayState } from '../config/gateway-state.ts';
import { catalogNames } from '../providers/provider-catalog.ts';
import type { RequestContext } from '../request-context.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { counterSeries, histogramSeries } from './metric-series.ts';

// Metrics for one finished request, recorded after the response has gone out. Label sets
// repeat (a handful of routes × providers × models), so each one's series are resolved
// once and kept (metric-series.ts: no label hashing or validation per observation).
// The status class labels are statusClass()'s (gateway-metrics.ts).

export const OPERATIONS: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'chat',
  '/v1/messages': 'chat',
  '/v1/completions': 'text_completion',
  '/v1/embeddings': 'embeddings',
  '/v1/responses': 'responses',
};

type Observe = (value: number) => void;
type Increment = (value?: number) => void;

// The series a request updates, found through maps keyed by label values (no key string
// built, no closure made per request): route → provider label → status class, and under
// route × provider, model label → the GenAI and cost series.
interface RouteNode {
  readonly operation: string | undefined;
  readonly overhead: Observe;
  readonly providers: Map<string, ProviderNode>;
}

interface ProviderNode {
  /** By statusClassIndex. */
  readonly classes: Array<ClassSeries | undefined>;
  readonly models: Map<string, ModelNode>;
}

interface ClassSeries {
  readonly requests: Increment;
  readonly duration: Observe;
}

interface ModelNode {
  /** error_type "" (status < 400). */
  ok: GenAiSeries | undefined;
  /** error_type = the status. */
  readonly errors: Map<number, GenAiSeries>;
  cost: CostSeries | undefined;
}

interface GenAiSeries {
  readonly duration: Observe;
  readonly ttft: Observe;
  readonly input: Observe;
  readonly output: Observe;
}

interface CostSeries {
  readonly cost: Increment;
  readonly unpriced: Increment;
}

interface SeriesCache {
  readonly routes: Map<string, RouteNode>;
  /** Nodes kept; label values are bounded, this bounds the maps too (past it, nothing is kept). */
  size: number;
}

const MAX_CACHED = 4096;
const caches = new WeakMap<GatewayMetrics, SeriesCache>();
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];

function statusClassIndex(status: number): number {
  if (status >= 500) return 4;
  if (status >= 400) return 3;
  if (status >= 300) return 2;
  if (status >= 200) return 1;
  return 0;
}

function cacheOf(metrics: GatewayMetrics): SeriesCache {
  let cache = caches.get(metrics);
  if (cache === undefined) {
    cache = { routes: new Map(), size: 0 };
    caches.set(metrics, cache);
  }
  return cache;
}

/** `map.set(key, value)` while the cache has room; `value` either way. */
function keep<K, V>(cache: SeriesCache, map: Map<K, V>, key: K, value: V): V {
  if (cache.size < MAX_CACHED) {
    cache.size++;
    map.set(key, value);
  }
  return value;
}

function routeNode(metrics: GatewayMetrics, cache: SeriesCache, route: string): RouteNode {
  return (
    cache.routes.get(route) ??
    keep(cache, cache.routes, route, { operation: OPERATIONS[route], overhead: histogramSeries(metrics.gatewayOverhead, { route }), providers: new Map() })
  );
}

function providerNode(cache: SeriesCache, node: RouteNode, provider: string): ProviderNode {
  return node.providers.get(provider) ?? keep(cache, node.providers, provider, { classes: [], models: new Map() });
}

function modelNode(cache: SeriesCache, node: ProviderNode, model: string): ModelNode {
  return node.models.get(model) ?? keep(cache, node.models, model, { ok: undefined, errors: new Map(), cost: undefined });
}

function classSeries(metrics: GatewayMetrics, node: ProviderNode, route: string, provider: string, klass: number): ClassSeries {
  let series = node.classes[klass];
  if (series === undefined) {
    const labels = { route, provider, status_class: CLASSES[klass] as string };
    series = { requests: counterSeries(metrics.requests, labels), duration: histogramSeries(metrics.requestDuration, labels) };
    node.classes[klass] = series;
  }
  return series;
}

function genAiSeries(metrics: GatewayMetrics, cache: SeriesCache, node: ModelNode, operation: string, provider: string, model: string, status: number): GenAiSeries {
  const found = status >= 400 ? node.errors.get(status) : node.ok;
  if (found !== undefined) return found;
  const labels = { gen_ai_operation_name: operation, gen_ai_system: provider, gen_ai_request_model: model };
  const series = {
    duration: histogramSeries(metrics.genAiDuration, { ...labels, error_type: status >= 400 ? String(status) : '' }),
    ttft: histogramSeries(metrics.genAiTimeToFirstToken, labels),
    input: histogramSeries(metrics.genAiTokenUsage, { ...labels, gen_ai_token_type: 'input' }),
    output: histogramSeries(metrics.genAiTokenUsage, { ...labels, gen_ai_token_type: 'output' }),
  };
  if (status < 400) node.ok = series;
  else keep(cache, node.errors, status, series);
  return series;
}

function costSeries(metrics: GatewayMetrics, node: ModelNode, provider: string, model: string): CostSeries {
  node.cost ??= { cost: counterSeries(metrics.costUsd, { provider, model }), unpriced: counterSeries(metrics.unpricedRequests, { provider, model }) };
  return node.cost;
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

/**
 * Metrics for one finished request: requests, durations, GenAI series and overhead, and its
 * cost (USD) on aigateway_cost_usd_total, where usage without a known price is counted as
 * unpriced. `now` is process.hrtime.bigint() at the end; `elapsedNs`, Number(now - context.startedAt)
 * when the caller has it already (each bigint difference is an allocation).
 */
export function observeRequest(metrics: GatewayMetrics, context: RequestContext, route: string, status: number, now: bigint = process.hrtime.bigint(), elapsedNs: number = Number(now - context.startedAt)): void {
  const seconds = elapsedNs / 1e9;
  const requested = context.provider;
  const known = requested === undefined ? undefined : knownLabels(context.state);
  const provider = known === undefined ? 'none' : known.providers.has(requested as string) ? (requested as string) : 'custom';
  const cache = cacheOf(metrics);
  const byRoute = routeNode(metrics, cache, route);
  const byProvider = providerNode(cache, byRoute, provider);
  const series = classSeries(metrics, byProvider, route, provider, statusClassIndex(status));
  series.requests();
  series.duration(seconds);

  if (known === undefined) return;
  const operation = byRoute.operation;
  const usage = context.usage;
  const cost = context.costUsd;
  const costed = usage !== undefined && cost !== 0;
  if (operation === undefined && !costed) return;
  const model = metrics.modelLabel.of(context.model, known.models);
  const byModel = modelNode(cache, byProvider, model);
  if (operation !== undefined) {
    const genAi = genAiSeries(metrics, cache, byModel, operation, provider, model, status);
    genAi.duration(seconds);
    if (context.ttftMs !== undefined) genAi.ttft(context.ttftMs / 1000);
    if (usage?.prompt !== undefined) genAi.input(usage.prompt);
    if (usage?.completion !== undefined) genAi.output(usage.completion);
    if (context.upstreamStartedAt !== undefined) {
      // Overhead: before the first upstream request, and after the last upstream answer ended
      // (added as numbers: exact below 2^53 ns, one bigint fewer).
      const before = Number(context.upstreamStartedAt - context.startedAt);
      const after = context.upstreamDoneAt === undefined ? 0 : Number(now - context.upstreamDoneAt);
      byRoute.overhead((before + (after > 0 ? after : 0)) / 1e9);
    }
  }
  if (costed) {
    const costs = costSeries(metrics, byModel, provider, model);
    if (cost === undefined) costs.unpriced();
    else costs.cost(cost);
  }
}
