import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { GatewayState } from '../config/gateway-state.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { GatewayError } from '../errors.ts';
import type { GatewayMetrics } from '../observability/gateway-metrics.ts';
import type { AttemptRecord } from '../observability/request-record.ts';
import type { RequestSpan } from '../observability/tracing.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { catalogEntry } from '../providers/provider-catalog.ts';
import { composeAttempt, FIRST_ATTEMPT, statusOf, succeeded, type Attempt, type AttemptOutcome } from '../resilience/attempt-chain.ts';
import { breakerInterceptor } from '../resilience/breaker-interceptor.ts';
import type { CircuitBreakers } from '../resilience/circuit-breakers.ts';
import { retryInterceptor } from '../resilience/retry-interceptor.ts';
import { timeoutInterceptor } from '../resilience/timeout-interceptor.ts';
import type { AttemptResult } from '../upstream/call-target.ts';
import { LeafCall, modelOf, retried } from './leaf-call.ts';
import { pickLoadBalancedChild } from './pick-load-balanced-target.ts';
import { resolveTarget } from './resolve-target.ts';
import type { PlanNode } from '../config/routing-plan.ts';

// The strategy walk (DESIGN.md §2): single | fallback | loadbalance | conditional over a
// compiled plan; at each leaf one attempt wrapped in retry, breaker and timeout
// (resilience/*-interceptor.ts). Gateway validation errors end the walk at once, except a
// target that cannot be resolved (a saved provider gone missing, an unknown provider): a
// fallback or loadbalance skips it like an unhealthy one — logged, counted, in the attempts —
// and the client sees its error only when no other target answers. Upstream answers and
// network failures are results the strategies decide on.

/** Process-wide pieces the walk needs; they outlive config reloads. */
export interface RoutingRuntime {
  readonly dispatcher: Dispatcher;
  readonly breakers: CircuitBreakers;
  readonly metrics: GatewayMetrics;
  readonly now: () => number;
  readonly random: () => number;
  readonly retryBaseDelayMs: number;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Told about skipped targets. */
  readonly logger?: { warn(object: object, message: string): void } | undefined;
}

export interface WalkRequest {
  readonly runtime: RoutingRuntime;
  readonly state: GatewayState;
  readonly endpoint: InferenceEndpoint;
  readonly body: Record<string, unknown>;
  readonly rawBody: Buffer | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  readonly pathname: string;
  readonly configId: string | undefined;
  readonly forwardHeaders: readonly string[];
  /** x-gateway-request-timeout: per-attempt bound and the whole request's budget. */
  readonly requestTimeoutMs: number | undefined;
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** The request's span when tracing is on: each attempt gets a client span and sends its traceparent. */
  readonly span?: RequestSpan | undefined;
  /** The budget reservation still in flight: awaited at each leaf before its attempt (no dispatch before admission). */
  readonly gate?: Promise<void> | undefined;
}

export type WalkResult = AttemptResult | { readonly kind: 'unavailable'; readonly labels: readonly string[]; readonly reason: string };

/** Mutable facts the walk reports back (headers, log, metrics). */
export interface WalkProgress {
  retries: number;
  /** When the first upstream request went out (the gateway's overhead ends there). */
  firstDispatchAt: bigint | undefined;
  lastPath: string | undefined;
  lastTarget: ResolvedTarget | undefined;
  /** Every attempt in order, skipped targets included (the request log's `attempts`). */
  attempts?: AttemptRecord[] | undefined;
}

// Resolution errors a strategy steps over: the target, not the request, is at fault.
const UNRESOLVABLE: ReadonlySet<string> = new Set([
  'AIGW_ERR_UNKNOWN_PROVIDER',
  'AIGW_ERR_UNSUPPORTED_PROVIDER',
  'AIGW_ERR_MISSING_PROVIDER',
  'AIGW_ERR_MISSING_PROVIDER_KEY',
]);

function isUnresolvable(error: unknown): error is GatewayError {
  return error instanceof GatewayError && UNRESOLVABLE.has(error.code);
}

// The walk's dispatch steps (walkPlan, runNode, a single or conditional node) are plain
// functions that return the chosen child's promise: one promise per awaited step (a
// fallback or loadbalance loop, the leaf), not one per node (issue 32).
export function walkPlan(root: PlanNode, request: WalkRequest, progress: WalkProgress): Promise<WalkResult> {
  try {
    return runNode(root, request, progress);
  } catch (error) {
    // A config error found while choosing (no targets, no condition matched): a rejection, as before.
    return Promise.reject(error);
  }
}

export function isSuccess(result: WalkResult): boolean {
  return result.kind !== 'unavailable' && succeeded(result);
}

/** Frees a result we will not relay (keeps the connection reusable when the body is small). */
export function discard(result: WalkResult): void {
  if (result.kind === 'response') result.response.body.dump().catch(() => undefined);
}

/** May throw synchronously (a config error while choosing); callers await it inside try. */
function runNode(node: PlanNode, request: WalkRequest, progress: WalkProgress): Promise<WalkResult> {
  switch (node.mode) {
    case undefined:
      return runLeaf(node, request, progress);
    case 'single':
      return runNode(firstChild(node), request, progress);
    case 'fallback':
      return runFallback(node, request, progress);
    case 'loadbalance':
      return runLoadBalance(node, request, progress);
    case 'conditional':
      return runConditional(node, request, progress);
  }
}

function firstChild(node: PlanNode): PlanNode {
  const child = node.children[0];
  if (child === undefined) throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `${node.path}: no targets.`);
  return child;
}

// A fallback whose first child is a leaf (the common shape) has no frame of its own until
// that leaf's answer is not a success: the leaf's frame goes on with it (`fallback`).
function runFallback(node: PlanNode, request: WalkRequest, progress: WalkProgress): Promise<WalkResult> {
  const first = node.children[0];
  if (first === undefined || first.mode !== undefined) return fallbackFrom(node, 0, request, progress, newSoFar());
  try {
    return runLeaf(first, request, progress, node);
  } catch (error) {
    if (!isUnresolvable(error) || request.signal.aborted) throw error;
    skipUnresolved(first, error, request);
    const soFar = newSoFar();
    soFar.unresolved = error;
    return fallbackFrom(node, 1, request, progress, soFar);
  }
}

/** What a fallback has seen so far. */
interface FallbackSoFar {
  unavailable: string[] | undefined;
  last: AttemptResult | undefined;
  unresolved: GatewayError | undefined;
}

function newSoFar(): FallbackSoFar {
  return { unavailable: undefined, last: undefined, unresolved: undefined };
}

async function fallbackFrom(node: PlanNode, start: number, request: WalkRequest, progress: WalkProgress, soFar: FallbackSoFar): Promise<WalkResult> {
  for (let index = start; index < node.children.length; index++) {
    const child = node.children[index] as PlanNode;
    let result: WalkResult;
    try {
      result = await runNode(child, request, progress);
    } catch (error) {
      if (!isUnresolvable(error) || request.signal.aborted) throw error;
      soFar.unresolved ??= error;
      skipUnresolved(child, error, request);
      continue;
    }
    const answer = settleChild(node, index, result, request, soFar);
    if (answer !== undefined) return answer;
  }
  if (soFar.last !== undefined) return soFar.last;
  // Nothing answered: the circuits' 503, or — when every target was unresolvable — the first one's error.
  if ((soFar.unavailable === undefined || soFar.unavailable.length === 0) && soFar.unresolved !== undefined) throw soFar.unresolved;
  return { kind: 'unavailable', labels: soFar.unavailable ?? [], reason: 'every fallback target is unavailable (circuit open)' };
}

/** One child's result: the fallback's answer, or undefined to go on to the next child. */
function settleChild(node: PlanNode, index: number, result: WalkResult, request: WalkRequest, soFar: FallbackSoFar): WalkResult | undefined {
  if (result.kind === 'unavailable') {
    (soFar.unavailable ??= []).push(...result.labels);
    return undefined;
  }
  if (isSuccess(result)) return result;
  if (soFar.last !== undefined) discard(soFar.last);
  soFar.last = result;
  const child = node.children[index] as PlanNode;
  const hasNext = index < node.children.length - 1;
  const fallsBack = child.fallbackOn === undefined || child.fallbackOn.has(statusOf(result));
  if (!hasNext || !fallsBack || request.signal.aborted) return result;
  request.runtime.metrics.fallbacks.inc({ config: request.configId ?? 'inline' });
  return undefined;
}

/** A leaf's result, or — when the leaf is a fallback's first child — the fallback's answer. */
function afterLeaf(fallback: PlanNode | undefined, result: WalkResult, request: WalkRequest, progress: WalkProgress): WalkResult | Promise<WalkResult> {
  if (fallback === undefined || isSuccess(result)) return result;
  const soFar = newSoFar();
  const answer = settleChild(fallback, 0, result, request, soFar);
  return answer ?? fallbackFrom(fallback, 1, request, progress, soFar);
}

// A missing provider is skipped on every request until it is back: one log line per target
// every SKIP_LOG_INTERVAL_MS (with the count in between) instead of one per request.
const SKIP_LOG_INTERVAL_MS = 10_000;
const MAX_SKIP_LOG_KEYS = 1_000;
const skipLogs = new WeakMap<RoutingRuntime, Map<string, { at: number; skipped: number }>>();

/** Logs and counts a target a strategy stepped over because it could not be resolved. */
function skipUnresolved(node: PlanNode, error: GatewayError, request: WalkRequest): void {
  const { runtime } = request;
  const config = request.configId ?? 'inline';
  runtime.metrics.unresolvedTargets.inc({ config });
  if (runtime.logger === undefined) return;
  let logs = skipLogs.get(runtime);
  if (logs === undefined) skipLogs.set(runtime, (logs = new Map()));
  const key = `${config}\u0000${node.path}\u0000${error.code}`;
  const now = runtime.now();
  const last = logs.get(key);
  if (last !== undefined && now - last.at < SKIP_LOG_INTERVAL_MS) {
    last.skipped++;
    return;
  }
  if (last === undefined && logs.size >= MAX_SKIP_LOG_KEYS) logs.clear(); // inline configs: keep it bounded
  logs.set(key, { at: now, skipped: 0 });
  const since = last === undefined ? {} : { skipped_since_last_line: last.skipped };
  runtime.logger.warn({ config_id: config, target: node.path, error_code: error.code, reason: error.message, ...since }, 'target skipped: it cannot be resolved');
}

async function runLoadBalance(node: PlanNode, request: WalkRequest, progress: WalkProgress): Promise<WalkResult> {
  const weighted = node.children.filter((child) => child.weight > 0);
  if (weighted.length === 0) {
    return { kind: 'unavailable', labels: [], reason: `${node.path}: every loadbalance target has weight 0` };
  }
  let available = weighted.filter((child) => nodeAvailable(child, request));
  let unresolved: GatewayError | undefined;
  for (;;) {
    const picked = pickLoadBalancedChild(available, request.runtime.random);
    if (picked === undefined) break;
    try {
      return await runNode(picked, request, progress);
    } catch (error) {
      if (!isUnresolvable(error) || request.signal.aborted) throw error;
      // Like an open circuit: picked again among the others.
      unresolved ??= error;
      skipUnresolved(picked, error, request);
      available = available.filter((child) => child !== picked);
    }
  }
  const labels = weighted.flatMap((child) => leafLabels(child, request));
  if (labels.length === 0 && unresolved !== undefined) throw unresolved;
  return { kind: 'unavailable', labels, reason: 'every loadbalance target is unavailable (circuit open)' };
}

function runConditional(node: PlanNode, request: WalkRequest, progress: WalkProgress): Promise<WalkResult> {
  const input = { metadata: request.metadata, params: request.body, url: { pathname: request.pathname } };
  const matched = node.conditions.find((condition) => condition.test(input))?.child ?? node.defaultChild;
  if (matched === undefined) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `${node.path}: no condition matched and no default target is set.`);
  }
  return runNode(matched, request, progress);
}

/** May throw synchronously (an unresolvable or unsupported target); callers await it inside try. */
function runLeaf(node: PlanNode, request: WalkRequest, progress: WalkProgress, fallback?: PlanNode): Promise<WalkResult> {
  const { runtime } = request;
  let target: ResolvedTarget;
  try {
    target = resolveTarget(node.settings, node.path, request.state, request.headers, node.origin);
  } catch (error) {
    if (isUnresolvable(error)) {
      const provider = node.settings.provider ?? node.settings.virtual_key;
      progress.attempts?.push({ target: node.path, provider, model: modelOf(node.settings, request), status: null, durationMs: 0, errorCode: error.code, skipped: 'unresolved' });
    }
    throw error;
  }
  progress.lastPath = node.path;
  progress.lastTarget = target;
  if (!target.adapter.supportsEndpoint(request.endpoint)) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no ${request.pathname} endpoint.`, {
      param: 'x-gateway-provider',
    });
  }
  const settings = node.settings;
  const breaker = settings.cb_config;
  // The breaker needs its label now; a retry only when it happens (no string per request).
  const label = breaker === undefined ? '' : targetLabel(node, target, request);
  const forwardHeaders = settings.forward_headers === undefined ? request.forwardHeaders : [...request.forwardHeaders, ...settings.forward_headers];

  const call = new LeafCall(node, target, request, progress, forwardHeaders, fallback);
  // No per-attempt bound and no request budget: the timeout step would pass undefined on.
  const perAttemptMs = request.requestTimeoutMs ?? settings.request_timeout;
  const timeout = perAttemptMs !== undefined || Number.isFinite(request.deadline);
  // Nothing can skip an attempt: retry(send) in one frame (the common config).
  if (breaker === undefined && !timeout) return retried(call, settings.retry, countRetry, discard, finishLeaf);

  // One attempt, wrapped as retry(breaker(timeout(send))), each step only when configured.
  const attempt = composeAttempt(
    call.asAttempt(),
    settings.retry === undefined
      ? undefined
      : retryInterceptor({
          settings: settings.retry,
          signal: request.signal,
          deadline: request.deadline,
          now: runtime.now,
          random: runtime.random,
          baseDelayMs: runtime.retryBaseDelayMs,
          sleep: runtime.sleep,
          discard,
          onRetry: () => countRetry(call, label),
        }),
    breaker === undefined
      ? undefined
      : breakerInterceptor({ breakers: runtime.breakers, id: breakerId(node, target, request), label, settings: breaker, signal: request.signal }),
    timeout ? timeoutInterceptor({ perAttemptMs, deadline: request.deadline, now: runtime.now }) : undefined,
  );
  if (request.gate === undefined) return skippedToResult(attempt(FIRST_ATTEMPT), call, label);
  // The target was resolved while the reservation travelled; a refusal rejects here, before
  // any breaker slot or dispatch, and no strategy catches it (not an unresolvable error).
  return request.gate.then(() => skippedToResult(attempt(FIRST_ATTEMPT), call, label));
}

/** A retry: the response's retry count and the metric (the label is built only when one happens). */
function countRetry(call: LeafCall, label = ''): void {
  const { request } = call;
  call.progress.retries++;
  request.runtime.metrics.retries.inc({ target: label !== '' ? label : targetLabel(call.node, call.target, request) });
}

async function skippedToResult(pending: Promise<AttemptOutcome>, call: LeafCall, label: string): Promise<WalkResult> {
  const outcome = await pending;
  if (outcome.kind !== 'skipped') return finishLeaf(call, outcome);
  const { node, target, request } = call;
  if (outcome.reason === 'circuit-open') {
    call.progress.attempts?.push({ target: node.path, provider: target.provider, model: modelOf(target.node, request), status: null, durationMs: 0, errorCode: undefined, skipped: 'circuit_open' });
  }
  return finishLeaf(call, outcome.reason === 'circuit-open' ? { kind: 'unavailable', labels: [label], reason: 'circuit open' } : timedOut(target, request));
}

function finishLeaf(call: LeafCall, result: WalkResult): WalkResult | Promise<WalkResult> {
  return afterLeaf(call.fallback, result, call.request, call.progress);
}

function timedOut(target: ResolvedTarget, request: WalkRequest): AttemptResult {
  const error = new GatewayError('AIGW_ERR_REQUEST_TIMEOUT', `Request timed out after ${request.requestTimeoutMs} ms (x-gateway-request-timeout).`);
  return { kind: 'error', error, target, networkOrTimeout: true };
}

function nodeAvailable(node: PlanNode, request: WalkRequest): boolean {
  if (node.mode !== undefined) return node.children.some((child) => nodeAvailable(child, request));
  const breaker = node.settings.cb_config;
  if (breaker === undefined) return true;
  const target = resolvedOrUndefined(node, request);
  // An unresolvable target is picked, fails to resolve, and is skipped there (logged and counted).
  return target === undefined || request.runtime.breakers.isAvailable(breakerId(node, target, request), breaker);
}

/** Labels of the targets whose circuit is open (unresolvable ones have none). */
function leafLabels(node: PlanNode, request: WalkRequest): string[] {
  if (node.mode !== undefined) return node.children.flatMap((child) => leafLabels(child, request));
  const target = resolvedOrUndefined(node, request);
  return target === undefined ? [] : [targetLabel(node, target, request)];
}

function resolvedOrUndefined(node: PlanNode, request: WalkRequest): ResolvedTarget | undefined {
  try {
    return resolveTarget(node.settings, node.path, request.state, request.headers, node.origin);
  } catch (error) {
    if (isUnresolvable(error)) return undefined;
    throw error;
  }
}

/** Stable breaker identity: saved config id + path, or provider + host + model for inline configs. */
function breakerId(node: PlanNode, target: ResolvedTarget, request: WalkRequest): string {
  if (request.configId !== undefined) return `${request.configId}#${node.path}`;
  const model = target.node.override_params?.['model'] ?? request.body['model'];
  return `${target.provider}|${target.baseUrl}|${String(model)}`;
}

/** Bounded metric label: saved config and target name, or the provider for inline configs. */
function targetLabel(node: PlanNode, target: ResolvedTarget, request: WalkRequest): string {
  if (request.configId !== undefined) return `${request.configId}:${node.name ?? node.path}`;
  // Inline configs are the request's: only a known provider name reaches the label.
  return `inline:${catalogEntry(target.provider) === undefined ? 'custom' : target.provider}`;
}
