import type { Dispatcher } from 'undici';
import { StreamAssembler } from '../cache/stream-assembler.ts';
import { SseFrame } from '../providers/sse-parser.ts';
import type { SseFrameStage, StageOutput } from '../streams/sse-frame-pipeline.ts';
import { guardedFetch } from '../upstream/guarded-call.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import { compileGuardrails, EMPTY_GUARDRAILS, type CompiledGuardrails } from '../guardrails/compile-guardrails.ts';
import { hookResultsChunk } from '../guardrails/hook-results-chunk.ts';
import { runAfterHooks, runBeforeHooks, type HookContext, type HookResult, type HooksOutcome, type RunOptions } from '../guardrails/run-hooks.ts';
import type { GatewayMetrics } from '../observability/gateway-metrics.ts';
import type { Logger } from 'pino';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { GuardrailPolicyEntry } from '../config/state-schema.ts';
import { GatewayError, GuardrailConfigError } from '../errors.ts';
import { conditionsMatch, type RequestFacts } from '../ratelimit/policy-matching.ts';
import type { ReachableTarget } from '../routing/reachable-targets.ts';

// Hooks and guardrails on the request path (DESIGN.md §2): input checks before routing
// (deny → 446, upstream never called), output checks on the answer (deny → 446; a failed
// check without deny → 246 with the normal body), `hook_results` in every answer that ran
// hooks. Streams: with an output deny the stream is held until the checks pass; without,
// the assembled text is checked at the end and the results go out as a final SSE event.

export const GUARDRAIL_DENIED_STATUS = 446;
export const GUARDRAIL_FAILED_STATUS = 246;

const compiledByState = new WeakMap<GatewayState, WeakMap<RoutingConfig, CompiledGuardrails>>();

/** Compiled guardrails of a config node, once per node and state snapshot. */
export function guardrailsOf(settings: RoutingConfig, state: GatewayState): CompiledGuardrails {
  if (
    settings.before_request_hooks === undefined &&
    settings.after_request_hooks === undefined &&
    settings.input_guardrails === undefined &&
    settings.output_guardrails === undefined
  ) {
    return EMPTY_GUARDRAILS;
  }
  let perState = compiledByState.get(state);
  if (perState === undefined) {
    perState = new WeakMap();
    compiledByState.set(state, perState);
  }
  let compiled = perState.get(settings);
  if (compiled === undefined) {
    compiled = compileGuardrails(settings, state.guardrails);
    perState.set(settings, compiled);
  }
  return compiled;
}

// Guardrails the operator attaches outside a routing config: on a saved provider (they run
// whenever a request may reach it, however it is named) and in `guardrailPolicies`
// (conditions on workspace, key, provider, model, config, metadata). Compiled once per
// snapshot; an attachment naming an unknown guardrail fails closed (400) for the requests it
// would cover, instead of letting them through unchecked.

interface Attachment {
  readonly compiled: CompiledGuardrails | undefined;
  readonly problem: string | undefined;
}

interface AttachedInState {
  readonly byProviderSlug: ReadonlyMap<string, Attachment>;
  readonly policies: ReadonlyArray<{ readonly entry: GuardrailPolicyEntry; readonly attachment: Attachment }>;
  readonly any: boolean;
}

const attachedByState = new WeakMap<GatewayState, AttachedInState>();

function attachedInState(state: GatewayState): AttachedInState {
  let attached = attachedByState.get(state);
  if (attached !== undefined) return attached;
  const byProviderSlug = new Map<string, Attachment>();
  for (const provider of state.providersBySlug.values()) {
    if (provider.input_guardrails === undefined && provider.output_guardrails === undefined) continue;
    byProviderSlug.set(provider.slug, attach(provider, state, `provider "${provider.slug}"`));
  }
  const policies = (state.document.guardrailPolicies ?? []).map((entry) => ({ entry, attachment: attach(entry, state, `guardrail policy "${entry.id}"`) }));
  attached = { byProviderSlug, policies, any: byProviderSlug.size > 0 || policies.length > 0 };
  attachedByState.set(state, attached);
  return attached;
}

function attach(names: { readonly input_guardrails?: readonly string[] | undefined; readonly output_guardrails?: readonly string[] | undefined }, state: GatewayState, what: string): Attachment {
  try {
    const compiled = compileGuardrails({ input_guardrails: names.input_guardrails?.slice(), output_guardrails: names.output_guardrails?.slice() }, state.guardrails);
    return { compiled, problem: undefined };
  } catch (error) {
    if (!(error instanceof GuardrailConfigError)) throw error;
    return { compiled: undefined, problem: `The guardrails attached to ${what} are invalid: ${error.message}` };
  }
}

/**
 * The guardrails attached to what a request resolves to: every saved provider it may reach
 * and every guardrail policy matching one of its targets' facts. EMPTY_GUARDRAILS when the
 * snapshot attaches none (the common case costs one lookup).
 */
export function attachedGuardrailsOf(
  state: GatewayState,
  resolved: () => { readonly targets: readonly ReachableTarget[]; readonly facts: readonly RequestFacts[] },
): CompiledGuardrails {
  const attached = attachedInState(state);
  if (!attached.any) return EMPTY_GUARDRAILS;
  const { targets, facts } = resolved();
  const found: Attachment[] = [];
  for (const target of targets) {
    const byProvider = target.slug === undefined ? undefined : attached.byProviderSlug.get(target.slug);
    if (byProvider !== undefined) found.push(byProvider);
  }
  for (const { entry, attachment } of attached.policies) {
    if (facts.some((fact) => conditionsMatch(entry.conditions, fact))) found.push(attachment);
  }
  let merged = EMPTY_GUARDRAILS;
  for (const attachment of new Set(found)) {
    if (attachment.problem !== undefined) throw new GatewayError('AIGW_ERR_INVALID_CONFIG', attachment.problem);
    merged = mergeGuardrails(merged, attachment.compiled ?? EMPTY_GUARDRAILS);
  }
  return merged;
}

/** Both sets of hooks, the first's before the second's; a hook object in both runs once. */
export function mergeGuardrails(first: CompiledGuardrails, second: CompiledGuardrails): CompiledGuardrails {
  if (second.empty) return first;
  if (first.empty) return second;
  const before = [...new Set([...first.before, ...second.before])];
  const after = [...new Set([...first.after, ...second.after])];
  return Object.freeze({
    before: Object.freeze(before),
    after: Object.freeze(after),
    empty: false,
    afterDenies: first.afterDenies || second.afterDenies,
  });
}

export interface GuardrailRuntime {
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  readonly dispatcher: Dispatcher;
}

/** Run options: metrics per check, webhooks through the egress-guarded agent. */
export function runOptionsOf(runtime: GuardrailRuntime): RunOptions {
  return {
    onCheck(check, verdict, seconds) {
      runtime.metrics.guardrailChecks.inc({ check, verdict });
      runtime.metrics.guardrailCheckDuration.observe({ check }, seconds);
    },
    // The guarded call: egress policy, timeouts, no redirects (webhook-check caps the read).
    fetch: guardedFetch(runtime.dispatcher, 'the guardrail webhook'),
  };
}

export function runInput(compiled: CompiledGuardrails, context: HookContext, options: RunOptions): Promise<HooksOutcome> | undefined {
  return compiled.before.length === 0 ? undefined : runBeforeHooks(compiled, context, options);
}

export interface HookResultsBody {
  before_request_hooks: readonly HookResult[];
  after_request_hooks: readonly HookResult[];
}

export function hookResultsOf(before: HooksOutcome | undefined, after: HooksOutcome | undefined): HookResultsBody {
  return { before_request_hooks: before?.results ?? [], after_request_hooks: after?.results ?? [] };
}

/** The 446 body: OpenAI-shaped error plus hook_results. */
export function deniedBody(stage: 'input' | 'output', results: HookResultsBody): Record<string, unknown> {
  return {
    error: {
      message: stage === 'input' ? 'The request was blocked by a guardrail.' : "The provider's answer was blocked by a guardrail.",
      type: 'guardrail_error',
      param: null,
      code: 'AIGW_ERR_GUARDRAIL_DENIED',
    },
    hook_results: results,
  };
}

export function verdictOf(before: HooksOutcome | undefined, after: HooksOutcome | undefined): 'pass' | 'fail' | 'deny' {
  if (before?.denied === true || after?.denied === true) return 'deny';
  if (before?.verdict === false || after?.verdict === false) return 'fail';
  return 'pass';
}

/** Logs async hooks' results when they finish; never delays the response. */
export function logAsync(outcome: HooksOutcome | undefined, logger: Logger, traceId: string): void {
  outcome?.asyncDone?.then(
    (results) => {
      if (results.length > 0) logger.info({ trace_id: traceId, async_hook_results: results }, 'async hooks finished');
    },
    () => undefined,
  );
}

/**
 * A stream's tail when output checks do not deny, as a stage of the relay's frame pipeline:
 * frames pass at once (and are assembled from the shared frames, no second parse); the
 * `[DONE]` frame is held until the checks on the assembled answer finish, then a
 * `hook_results` event (a chunk with no choices, so SDKs ignore it) goes out before it.
 */
export class GuardedStreamTail implements SseFrameStage {
  readonly #assembler: StreamAssembler;
  readonly #finish: (answer: unknown) => Promise<HookResultsBody>;
  #finished = false;

  constructor(endpoint: InferenceEndpoint, finish: (answer: unknown) => Promise<HookResultsBody>) {
    this.#assembler = new StreamAssembler(endpoint);
    this.#finish = finish;
  }

  frame(frame: SseFrame): StageOutput {
    this.#assembler.frame(frame);
    if (this.#finished || frame.data.trim() !== '[DONE]') return frame;
    this.#finished = true;
    return this.#finish(this.#assembler.result()).then(
      (results) => [SseFrame.of(hookResultsChunk(results)), frame],
      () => [frame],
    );
  }
}

export { runAfterHooks };
export type { CompiledGuardrails, HooksOutcome };
