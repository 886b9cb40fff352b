import type { RetrySettings } from '../config/routing-config-schema.ts';
import type { PlanNode } from '../config/routing-plan.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { AttemptSpan } from '../observability/tracing.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { statusOf, succeeded, type Attempt } from '../resilience/attempt-chain.ts';
import { nextRetryWait } from '../resilience/retry-interceptor.ts';
import { attemptTarget, type AttemptResult } from '../upstream/call-target.ts';
import type { WalkProgress, WalkRequest, WalkResult } from './execute-plan.ts';

// One leaf's upstream attempts (issue 32). The send step is split in two synchronous halves
// around the one await: `dispatch` (mark the dispatch, start the attempt's span, call
// `attemptTarget`) and `settle` (record the attempt, end the span). A leaf with neither a
// breaker nor a time bound — the common config — runs `retried`: retry(send) in one async
// frame, with no per-request closures or context copies; the retry decisions are the retry
// interceptor's (`nextRetryWait`). A leaf with either still goes through the interceptors,
// with `asAttempt` as their send step.

const OPERATION: Readonly<Partial<Record<InferenceEndpoint, string>>> = {
  'chat.completions': 'chat',
  messages: 'chat',
  completions: 'text_completion',
  embeddings: 'embeddings',
  responses: 'responses',
};

/** The model a target is asked for: its override_params.model, else the request's. */
export function modelOf(settings: PlanNode['settings'], request: WalkRequest): string | undefined {
  const model = settings.override_params?.['model'] ?? request.body['model'];
  return typeof model === 'string' ? model : undefined;
}

export class LeafCall {
  readonly node: PlanNode;
  readonly target: ResolvedTarget;
  readonly request: WalkRequest;
  readonly progress: WalkProgress;
  readonly forwardHeaders: readonly string[];
  /** The fallback this leaf is the first child of: the leaf's frame goes on with it on a failure. */
  readonly fallback: PlanNode | undefined;
  // The attempt in flight (a leaf's attempts run one after another).
  #model: string | undefined = undefined;
  #startedAt = 0;
  #span: AttemptSpan | undefined = undefined;

  constructor(node: PlanNode, target: ResolvedTarget, request: WalkRequest, progress: WalkProgress, forwardHeaders: readonly string[], fallback: PlanNode | undefined) {
    this.node = node;
    this.target = target;
    this.request = request;
    this.progress = progress;
    this.forwardHeaders = forwardHeaders;
    this.fallback = fallback;
  }

  dispatch(retry: number, timeoutMs: number | undefined): Promise<AttemptResult> {
    const { request, target } = this;
    this.progress.firstDispatchAt ??= process.hrtime.bigint();
    const model = modelOf(target.node, request);
    this.#model = model;
    this.#startedAt = performance.now();
    const span = request.span?.startAttempt({
      provider: target.provider,
      model,
      operation: OPERATION[request.endpoint] ?? request.endpoint,
      retry,
      targetPath: this.node.path,
    });
    this.#span = span;
    return attemptTarget({
      dispatcher: request.runtime.dispatcher,
      target,
      endpoint: request.endpoint,
      body: request.body,
      rawBody: request.rawBody,
      // The attempt's traceparent goes upstream like a forwarded header (ours replaces the client's).
      requestHeaders: span === undefined ? request.headers : { ...request.headers, traceparent: span.traceparent },
      forwardHeaders: span === undefined ? this.forwardHeaders : [...this.forwardHeaders, 'traceparent'],
      timeoutMs,
      signal: request.signal,
    });
  }

  settle(result: AttemptResult): void {
    this.progress.attempts?.push({
      target: this.node.path,
      provider: this.target.provider,
      model: this.#model,
      status: statusOf(result),
      durationMs: performance.now() - this.#startedAt,
      errorCode: result.kind === 'error' ? result.error.code : undefined,
    });
    const span = this.#span;
    if (span === undefined) return;
    this.#span = undefined;
    // A stream being relayed stays open until the request ends.
    if (succeeded(result) && result.kind === 'response' && result.plain === undefined) span.keepOpen();
    else span.end(statusOf(result), result.kind === 'error' ? result.error.code : undefined);
  }

  /** The send step for the interceptors (leaves with a breaker or a time bound). */
  asAttempt(): Attempt {
    return async (context) => {
      context.beforeDispatch();
      const result = await this.dispatch(context.retry, context.timeoutMs);
      this.settle(result);
      return result;
    };
  }
}

/** retry(send) in one frame: what the retry interceptor around `asAttempt()` does, minus its closures; `finish` takes the result on. */
export async function retried(
  call: LeafCall,
  settings: RetrySettings | undefined,
  onRetry: (call: LeafCall) => void,
  discard: (result: AttemptResult) => void,
  finish: (call: LeafCall, result: AttemptResult) => WalkResult | Promise<WalkResult>,
): Promise<WalkResult> {
  const { request } = call;
  if (request.gate !== undefined) await request.gate;
  const { runtime, signal } = request;
  let previous: AttemptResult | undefined;
  for (let retry = 0; ; retry++) {
    if (previous !== undefined) discard(previous);
    const result = await call.dispatch(retry, undefined);
    call.settle(result);
    if (settings === undefined) return finish(call, result);
    previous = result;
    const wait = nextRetryWait(result, retry, settings, signal, request.deadline, runtime.now, runtime.random, runtime.retryBaseDelayMs);
    if (wait === undefined) return finish(call, result);
    await runtime.sleep(wait, signal);
    if (signal.aborted) return finish(call, result);
    onRetry(call);
  }
}
