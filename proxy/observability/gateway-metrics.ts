import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  readonly circuitState: Gauge<'target'>;
  readonly circuitTransitions: Counter<'target' | 'from' | 'to'>;
  readonly rateLimitDecisions: Counter<'policy' | 'result'>;
  /** Marks `hash` as the served config (the one series with value 1). */
  setConfigHash(hash: string): void;
}

export function createGatewayMetrics(options: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'aigateway_process_' });
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
  return {
    registry,
    rateLimitDecisions,
    requests,
    requestDuration,
    configReloads,
    configInfo,
    retries,
    fallbacks,
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
