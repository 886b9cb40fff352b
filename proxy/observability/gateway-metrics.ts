import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { TOKEN_COUNT_REJECTIONS, tokenCountRejections } from '../accounting/token-count.ts';

// The proxy's Prometheus series (DESIGN.md §6). One registry per gateway instance, so
// tests can run several gateways in one process. Labels stay bounded: route patterns,
// provider names and status classes only — never keys, trace ids or metadata.

export interface GatewayMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'route' | 'provider' | 'status_class'>;
  readonly requestDuration: Histogram<'route' | 'provider' | 'status_class'>;
  readonly configReloads: Counter<'result'>;
  readonly configInfo: Gauge<'hash'>;
  readonly retries: Counter<'target'>;
  readonly fallbacks: Counter<'config'>;
  /** Targets skipped because they could not be resolved (e.g. a saved provider gone missing). */
  readonly unresolvedTargets: Counter<'config'>;
  readonly circuitState: Gauge<'target'>;
  readonly circuitTransitions: Counter<'target' | 'from' | 'to'>;
  readonly rateLimitDecisions: Counter<'policy' | 'result'>;
  /** Usage-limit (budget) decisions by policy id: allowed, denied, error_open, error_closed, settle_error, alert_error. */
  readonly budgetDecisions: Counter<'policy' | 'result'>;
  /** USD settled on cost budgets by this replica (sum over replicas for the total). */
  readonly budgetSpentUsd: Counter<'policy'>;
  /** USD left in the last group this replica settled, per cost budget. */
  readonly budgetRemainingUsd: Gauge<'policy'>;
  readonly budgetAlerts: Counter<'policy'>;
  readonly genAiDuration: Histogram<GenAiLabel | 'error_type'>;
  readonly genAiTimeToFirstToken: Histogram<GenAiLabel>;
  readonly genAiTokenUsage: Histogram<GenAiLabel | 'gen_ai_token_type'>;
  readonly gatewayOverhead: Histogram<'route'>;
  /** USD spent, from the price table (labels bounded like the GenAI series). */
  readonly costUsd: Counter<'provider' | 'model'>;
  /** Requests with usage whose model has no known price: counted, never priced as zero. */
  readonly unpricedRequests: Counter<'provider' | 'model'>;
  readonly overloadRejections: Counter;
  readonly cacheRequests: Counter<'status'>;
  readonly cacheErrors: Counter<'operation'>;
  readonly guardrailChecks: Counter<'check' | 'verdict'>;
  readonly guardrailCheckDuration: Histogram<'check'>;
  /** Throws contained in a request's accounting (request-finish.ts), by stage: never fatal, always counted. */
  readonly internalErrors: Counter<'stage'>;
  /** Reports the response cache's size at scrape time. */
  watchCacheSize(stats: () => { entries: number; bytes: number }): void;
  /** Model names as label values, capped so a client cannot explode cardinality. */
  readonly modelLabel: BoundedLabel;
  /** Rate-limit policy ids as label values (policies can be created through the API). */
  readonly policyLabel: BoundedLabel;
  /** Marks `hash` as the served config (the one series with value 1). */
  setConfigHash(hash: string): void;
}

export type GenAiLabel = 'gen_ai_operation_name' | 'gen_ai_system' | 'gen_ai_request_model';

/**
 * A label fed by input: values the operator made known pass; of the rest, the first `limit`
 * distinct ones pass and later ones are reported as `other`.
 */
export class BoundedLabel {
  readonly #seen = new Set<string>();
  readonly #limit: number;
  constructor(limit: number) {
    this.#limit = limit;
  }
  of(value: string | undefined, known?: ReadonlySet<string>): string {
    if (value === undefined || value === '') return 'none';
    if (this.#seen.has(value) || (known?.has(value) === true && value.length <= 128)) return value;
    if (this.#seen.size >= this.#limit || value.length > 128) return 'other';
    this.#seen.add(value);
    return value;
  }
}

// OpenTelemetry GenAI semantic-convention buckets (durations in s, tokens by powers of 4).
const LLM_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 300];
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60];
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];
const OVERHEAD_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.5];

/** How often the event-loop lag histogram samples (ms). */
const EVENT_LOOP_SAMPLE_MS = 100;

export function createGatewayMetrics(options: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  // The event-loop lag histogram samples on a timer: prom-client's 10 ms woke an idle
  // gateway 100 times a second (≈ 9 ms of CPU a second, enough to keep the idle memory
  // release from ever seeing an idle loop). A stall still shows: it delays the next sample.
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'aigateway_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const requests = new Counter({
    name: 'aigateway_requests_total',
    help: 'Requests answered by the gateway, by route, provider and status class.',
    labelNames: ['route', 'provider', 'status_class'] as const,
    registers: [registry],
  });
  const requestDuration = new Histogram({
    name: 'aigateway_request_duration_seconds',
    help: 'Time from request arrival to the end of the response (streams included).',
    labelNames: ['route', 'provider', 'status_class'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const configReloads = new Counter({
    name: 'aigateway_config_reloads_total',
    help: 'State file reloads by result (success | failure).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const configInfo = new Gauge({
    name: 'aigateway_config_info',
    help: 'The content hash of the state being served (value 1).',
    labelNames: ['hash'] as const,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'aigateway_retries_total',
    help: 'Retries made, by target (saved config:target name, or inline:<provider>).',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  const fallbacks = new Counter({
    name: 'aigateway_fallbacks_total',
    help: 'Times a fallback strategy moved on to its next target, by saved config id (or inline).',
    labelNames: ['config'] as const,
    registers: [registry],
  });
  const unresolvedTargets = new Counter({
    name: 'aigateway_unresolved_targets_total',
    help: 'Targets a strategy skipped because they could not be resolved (a missing saved provider, an unknown provider), by saved config id (or inline).',
    labelNames: ['config'] as const,
    registers: [registry],
  });
  const circuitState = new Gauge({
    name: 'aigateway_circuit_state',
    help: 'Circuit breaker state by target: 0 closed, 1 half-open, 2 open.',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  const circuitTransitions = new Counter({
    name: 'aigateway_circuit_transitions_total',
    help: 'Circuit breaker state changes by target.',
    labelNames: ['target', 'from', 'to'] as const,
    registers: [registry],
  });
  const rateLimitDecisions = new Counter({
    name: 'aigateway_ratelimit_decisions_total',
    help: 'Rate-limit decisions by policy id and result (allowed | denied | error).',
    labelNames: ['policy', 'result'] as const,
    registers: [registry],
  });
  const budgetDecisions = new Counter({
    name: 'aigateway_budget_decisions_total',
    help: 'Usage-limit (budget) decisions by policy id and result (allowed | denied | error_open | error_closed | settle_error | alert_error).',
    labelNames: ['policy', 'result'] as const,
    registers: [registry],
  });
  const budgetSpentUsd = new Counter({
    name: 'aigateway_budget_spent_usd',
    help: 'USD settled on cost usage-limit policies by this replica, by policy id.',
    labelNames: ['policy'] as const,
    registers: [registry],
  });
  const budgetRemainingUsd = new Gauge({
    name: 'aigateway_budget_remaining_usd',
    help: 'USD left this period in the group last settled, by cost usage-limit policy id.',
    labelNames: ['policy'] as const,
    registers: [registry],
  });
  const budgetAlerts = new Counter({
    name: 'aigateway_budget_alerts_total',
    help: 'Usage-limit alert thresholds crossed (once per policy, period and group), by policy id.',
    labelNames: ['policy'] as const,
    registers: [registry],
  });
  const genAiLabels = ['gen_ai_operation_name', 'gen_ai_system', 'gen_ai_request_model'] as const;
  const genAiDuration = new Histogram({
    name: 'gen_ai_server_request_duration_seconds',
    help: 'GenAI request duration (OpenTelemetry semantic conventions), arrival to end of answer.',
    labelNames: [...genAiLabels, 'error_type'] as const,
    buckets: LLM_DURATION_BUCKETS,
    registers: [registry],
  });
  const genAiTimeToFirstToken = new Histogram({
    name: 'gen_ai_server_time_to_first_token_seconds',
    help: 'Time from arrival to the first chunk of a streamed answer.',
    labelNames: genAiLabels,
    buckets: TTFT_BUCKETS,
    registers: [registry],
  });
  const genAiTokenUsage = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'Tokens per request as reported by the provider, by gen_ai_token_type (input | output).',
    labelNames: [...genAiLabels, 'gen_ai_token_type'] as const,
    buckets: TOKEN_BUCKETS,
    registers: [registry],
  });
  const gatewayOverhead = new Histogram({
    name: 'aigateway_gateway_overhead_seconds',
    help: "Time spent in the gateway: the request's total time minus the time with the provider.",
    labelNames: ['route'] as const,
    buckets: OVERHEAD_BUCKETS,
    registers: [registry],
  });
  const costUsd = new Counter({
    name: 'aigateway_cost_usd_total',
    help: 'USD spent at providers, from the model price table (cached input and reasoning tokens included).',
    labelNames: ['provider', 'model'] as const,
    registers: [registry],
  });
  const unpricedRequests = new Counter({
    name: 'aigateway_cost_unpriced_requests_total',
    help: 'Requests with token usage whose model has no known price (cost unknown, not zero).',
    labelNames: ['provider', 'model'] as const,
    registers: [registry],
  });
  const overloadRejections = new Counter({
    name: 'aigateway_overload_rejections_total',
    help: 'Requests refused with 503 because the gateway was at its in-flight limit.',
    registers: [registry],
  });
  const cacheRequests = new Counter({
    name: 'aigateway_cache_requests_total',
    help: 'Cache lookups by status (HIT, SEMANTIC_HIT, MISS, REFRESH).',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const cacheErrors = new Counter({
    name: 'aigateway_cache_errors_total',
    help: 'Cache store, index or embedder failures (each request carried on as a MISS), by operation.',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  const guardrailChecks = new Counter({
    name: 'aigateway_guardrail_checks_total',
    help: 'Guardrail and hook checks run, by check id and verdict (pass | fail | error).',
    labelNames: ['check', 'verdict'] as const,
    registers: [registry],
  });
  const guardrailCheckDuration = new Histogram({
    name: 'aigateway_guardrail_check_duration_seconds',
    help: 'Time one guardrail check took, by check id.',
    labelNames: ['check'] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 10],
    registers: [registry],
  });
  const internalErrors = new Counter({
    name: 'aigateway_internal_errors_total',
    help: "Throws contained while accounting a request (the answer was already out), by stage: usage, tokens, cost, metrics, log, log_store, span, finish.",
    labelNames: ['stage'] as const,
    registers: [registry],
  });
  new Counter({
    name: 'aigateway_upstream_usage_rejected_total',
    help: 'Token counts in upstream answers refused as not a sane count (treated as absent), by reason; process-wide.',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      // The tally lives with the check (token-count.ts), shared by every gateway in the process.
      const tally = tokenCountRejections();
      this.reset();
      for (const reason of TOKEN_COUNT_REJECTIONS) this.inc({ reason }, tally[reason]);
    },
  });
  let cacheStats: (() => { entries: number; bytes: number }) | undefined;
  new Gauge({
    name: 'aigateway_cache_entries',
    help: 'Entries in the response cache.',
    registers: [registry],
    collect() {
      if (cacheStats !== undefined) this.set(cacheStats().entries);
    },
  });
  new Gauge({
    name: 'aigateway_cache_bytes',
    help: 'Bytes held by the response cache.',
    registers: [registry],
    collect() {
      if (cacheStats !== undefined) this.set(cacheStats().bytes);
    },
  });
  return {
    registry,
    overloadRejections,
    cacheRequests,
    cacheErrors,
    guardrailChecks,
    guardrailCheckDuration,
    internalErrors,
    watchCacheSize(stats) {
      cacheStats = stats;
    },
    rateLimitDecisions,
    budgetDecisions,
    budgetSpentUsd,
    budgetRemainingUsd,
    budgetAlerts,
    genAiDuration,
    genAiTimeToFirstToken,
    genAiTokenUsage,
    gatewayOverhead,
    costUsd,
    unpricedRequests,
    modelLabel: new BoundedLabel(200),
    policyLabel: new BoundedLabel(500),
    requests,
    requestDuration,
    configReloads,
    configInfo,
    retries,
    fallbacks,
    unresolvedTargets,
    circuitState,
    circuitTransitions,
    setConfigHash(hash) {
      configInfo.reset();
      configInfo.set({ hash }, 1);
    },
  };
}

export function statusClass(status: number): string {
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  if (status >= 300) return '3xx';
  if (status >= 200) return '2xx';
  return '1xx';
}
