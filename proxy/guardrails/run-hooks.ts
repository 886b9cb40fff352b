// Runs compiled hooks for one request: before the upstream call (runBeforeHooks) or after
// it (runAfterHooks). The outcome says whether every check passed, whether a hook
// denies, what goes into `hook_results`, and the rewritten body when a mutator changed it.
//
// Order and concurrency:
// - awaited hooks run side by side, unless one of them may rewrite the body; then they
//   run in config order, each seeing the previous hooks' rewrites;
// - inside a hook, checks run side by side on the hook's input, except that rewriting
//   checks are chained in order (two rewrites of one body cannot be merged); with
//   `sequential: true` every check runs in order and sees the previous rewrite;
// - async hooks start once the awaited ones are done, on the final body, without the
//   request's abort signal; their results arrive through `asyncDone`, which never rejects.
// A check that throws (or a webhook that times out) passes unless the hook has
// fail_on_error; either way its error is reported.

import type { HookFeedback } from '../config/routing-config-hooks-schema.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { CheckInput, HookPhase } from './check-definition.ts';
import type { CompiledCheck, CompiledGuardrails, CompiledHook } from './compile-guardrails.ts';
import { requestText, responseText } from './guardrail-text.ts';

/** The request as the hooks see it. */
export interface HookContext {
  readonly endpoint: InferenceEndpoint;
  readonly requestBody: Record<string, unknown>;
  /** The parsed OpenAI-shaped answer (after hooks; for a stream, the assembled answer). */
  readonly responseBody?: unknown;
  /** The request's x-gateway-metadata. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly model?: string;
  readonly provider?: string;
  /** Aborts pending checks (webhooks) when the request is abandoned. */
  readonly signal?: AbortSignal;
}

export interface RunOptions {
  /** Metrics sink, called once per check run. */
  onCheck?(checkId: string, verdict: 'pass' | 'fail' | 'error', seconds: number): void;
  /** Used by webhooks; global fetch by default. Pass one bound to the egress-guarded agent. */
  readonly fetch?: typeof fetch;
  /** Webhook timeout when a check sets none (default DEFAULT_WEBHOOK_TIMEOUT_MS). */
  readonly webhookTimeoutMs?: number;
}

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 3_000;

/** One check's entry in `hook_results`. */
export interface HookCheckResult {
  readonly id: string;
  /** After `not`, and after an error was turned into a pass (or a fail with fail_on_error). */
  readonly verdict: boolean;
  readonly data: Record<string, unknown> | null;
  readonly error?: { readonly message: string };
  /** Milliseconds. */
  readonly execution_time: number;
  /** The check rewrote the body. */
  readonly transformed: boolean;
}

/** One hook's entry in `hook_results.before_request_hooks` / `after_request_hooks`. */
export interface HookResult {
  readonly id: string;
  readonly type: string;
  /** Every check passed. */
  readonly verdict: boolean;
  /** This hook's outcome denies the request (446). */
  readonly deny: boolean;
  readonly async: boolean;
  /** Milliseconds. */
  readonly execution_time: number;
  readonly checks: readonly HookCheckResult[];
  /** on_success / on_fail feedback, by the verdict. */
  readonly feedback?: HookFeedback;
  /** Some check of this hook rewrote the body. */
  readonly transformed: boolean;
}

export interface HooksOutcome {
  /** Every check of every awaited hook passed. */
  readonly verdict: boolean;
  /** Some awaited hook denies (→ 446). */
  readonly denied: boolean;
  /** Awaited hooks' results, in config order. */
  readonly results: readonly HookResult[];
  /** Set when the request body was rewritten (before hooks). */
  readonly requestBody?: Record<string, unknown>;
  /** Set when the answer was rewritten (after hooks). */
  readonly responseBody?: unknown;
  /** Async hooks' results; never rejects. Not to be awaited on the response path. */
  readonly asyncDone?: Promise<HookResult[]>;
}

const PASSED: HooksOutcome = Object.freeze({ verdict: true, denied: false, results: [] });

/** Runs the before-request hooks and input guardrails. */
export function runBeforeHooks(compiled: CompiledGuardrails, ctx: HookContext, options: RunOptions = {}): Promise<HooksOutcome> {
  return runPhase(compiled.before, 'before', ctx, options);
}

/** Runs the after-request hooks and output guardrails on `ctx.responseBody`. */
export function runAfterHooks(compiled: CompiledGuardrails, ctx: HookContext, options: RunOptions = {}): Promise<HooksOutcome> {
  return runPhase(compiled.after, 'after', ctx, options);
}

type Shared = Omit<CheckInput, 'phase' | 'requestBody' | 'responseBody' | 'text' | 'signal'>;

interface Run {
  readonly phase: HookPhase;
  readonly shared: Shared;
  readonly requestBody: Record<string, unknown>;
  readonly options: RunOptions;
}

async function runPhase(hooks: readonly CompiledHook[], phase: HookPhase, ctx: HookContext, options: RunOptions): Promise<HooksOutcome> {
  if (hooks.length === 0) return PASSED;
  const run: Run = {
    phase,
    requestBody: ctx.requestBody,
    options,
    shared: {
      endpoint: ctx.endpoint,
      metadata: ctx.metadata ?? {},
      model: ctx.model,
      provider: ctx.provider,
      fetch: options.fetch ?? globalThis.fetch,
      webhookTimeoutMs: options.webhookTimeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS,
    },
  };
  const original: unknown = phase === 'before' ? ctx.requestBody : ctx.responseBody;
  const awaited = hooks.filter((hook) => !hook.async);
  const background = hooks.filter((hook) => hook.async);

  const results: HookResult[] = [];
  let subject = original;
  if (awaited.some((hook) => hook.checks.some((check) => check.mayTransform))) {
    for (const hook of awaited) {
      const ran = await runHook(hook, subject, ctx.signal, run);
      results.push(ran.result);
      subject = ran.subject;
    }
  } else {
    for (const ran of await Promise.all(awaited.map((hook) => runHook(hook, subject, ctx.signal, run)))) results.push(ran.result);
  }

  const changed = subject !== original;
  const outcome: HooksOutcome = {
    verdict: results.every((result) => result.verdict),
    denied: results.some((result) => result.deny),
    results,
    ...(changed && phase === 'before' ? { requestBody: subject as Record<string, unknown> } : {}),
    ...(changed && phase === 'after' ? { responseBody: subject } : {}),
  };
  if (background.length === 0) return outcome;
  // Async hooks see what was sent; their rewrites have nowhere to go and are dropped.
  const asyncDone = Promise.all(background.map((hook) => runHook(hook, subject, undefined, run)))
    .then((ran) => ran.map(({ result }) => result))
    .catch(() => []);
  return { ...outcome, asyncDone };
}

/** The input of one check over `subject` (the request body before, the answer after). */
function checkInput(run: Run, subject: unknown, signal: AbortSignal | undefined): CheckInput {
  const requestBody = run.phase === 'before' ? (subject as Record<string, unknown>) : run.requestBody;
  const responseBody = run.phase === 'after' ? subject : undefined;
  let text: string | undefined;
  const { endpoint } = run.shared;
  return {
    ...run.shared,
    phase: run.phase,
    requestBody,
    responseBody,
    signal,
    // Extracted on first use and shared by the checks that see this input.
    get text() {
      text ??= run.phase === 'before' ? requestText(endpoint, requestBody) : responseText(endpoint, responseBody);
      return text;
    },
  };
}

interface CheckRun {
  readonly result: HookCheckResult;
  readonly subject: unknown;
}

async function runHook(
  hook: CompiledHook,
  subject: unknown,
  signal: AbortSignal | undefined,
  run: Run,
): Promise<{ result: HookResult; subject: unknown }> {
  const started = performance.now();
  const runOne = (check: CompiledCheck, input: unknown): Promise<CheckRun> =>
    runCheck(check, checkInput(run, input, signal), input, hook.failOnError, run.options);
  const byCheck = new Map<CompiledCheck, HookCheckResult>();
  let current = subject;

  if (hook.sequential) {
    for (const check of hook.checks) {
      const ran = await runOne(check, current);
      byCheck.set(check, ran.result);
      current = ran.subject;
    }
  } else {
    const shared = checkInput(run, subject, signal);
    const validators = hook.checks.filter((check) => !check.mayTransform);
    const mutators = hook.checks.filter((check) => check.mayTransform);
    const chain = (async () => {
      for (const check of mutators) {
        const ran = await runOne(check, current);
        byCheck.set(check, ran.result);
        current = ran.subject;
      }
    })();
    const checked = await Promise.all(
      validators.map((check) => runCheck(check, shared, subject, hook.failOnError, run.options)),
    );
    validators.forEach((check, index) => {
      const result = checked[index];
      if (result !== undefined) byCheck.set(check, result.result);
    });
    await chain;
  }

  const checks = hook.checks.flatMap((check) => byCheck.get(check) ?? []);
  const verdict = checks.every((check) => check.verdict);
  const feedback = verdict ? hook.onSuccessFeedback : hook.onFailFeedback;
  const result: HookResult = {
    id: hook.id,
    type: hook.type,
    verdict,
    deny: !hook.async && (verdict ? hook.denyOnSuccess : hook.denyOnFail),
    async: hook.async,
    execution_time: milliseconds(performance.now() - started),
    checks,
    ...(feedback === undefined ? {} : { feedback }),
    transformed: checks.some((check) => check.transformed),
  };
  return { result, subject: current };
}

async function runCheck(
  check: CompiledCheck,
  input: CheckInput,
  subject: unknown,
  failOnError: boolean,
  options: RunOptions,
): Promise<CheckRun> {
  const started = performance.now();
  let result: HookCheckResult;
  let next = subject;
  try {
    const outcome = await check.run(input);
    const elapsed = performance.now() - started;
    const verdict = check.not ? !outcome.verdict : outcome.verdict;
    const transformed = outcome.body !== undefined && outcome.body !== subject;
    if (transformed && input.phase === 'before' && !isPlainObject(outcome.body)) {
      throw new Error('the rewritten request body is not a JSON object');
    }
    if (transformed) next = outcome.body;
    result = { id: check.id, verdict, data: outcome.data ?? null, execution_time: milliseconds(elapsed), transformed };
    report(options, check.id, verdict ? 'pass' : 'fail', elapsed);
  } catch (error) {
    const elapsed = performance.now() - started;
    const message = error instanceof Error ? error.message : String(error);
    result = { id: check.id, verdict: !failOnError, data: null, error: { message }, execution_time: milliseconds(elapsed), transformed: false };
    report(options, check.id, 'error', elapsed);
  }
  return { result, subject: next };
}

function report(options: RunOptions, checkId: string, verdict: 'pass' | 'fail' | 'error', elapsedMs: number): void {
  try {
    options.onCheck?.(checkId, verdict, elapsedMs / 1000);
  } catch {
    // A broken metrics sink must not change a verdict.
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Milliseconds with two decimals: enough to compare checks, short in a response body. */
function milliseconds(value: number): number {
  return Math.round(value * 100) / 100;
}
