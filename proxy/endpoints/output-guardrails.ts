import { StreamAssembler } from '../cache/stream-assembler.ts';
import { hookResultsChunk } from '../guardrails/hook-results-chunk.ts';
import type { HookContext } from '../guardrails/run-hooks.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { RequestContext } from '../request-context.ts';
import {
  deniedBody,
  GUARDRAIL_DENIED_STATUS,
  GUARDRAIL_FAILED_STATUS,
  GuardedStreamTail,
  hookResultsOf,
  logAsync,
  runAfterHooks,
  runOptionsOf,
  verdictOf,
  type CompiledGuardrails,
  type GuardrailRuntime,
  type HooksOutcome,
} from './guardrail-flow.ts';
import type { StreamGuard } from './relay-response.ts';

// Output guardrails on one answer, in the three forms the relay takes them: a plain
// answer's replacement (246 / 446 + hook_results), a held stream's check, a stream's tail.

export interface OutputGuardrails {
  finishPlain(parsed: unknown): Promise<{ status: number; body: unknown }>;
  readonly hold: HeldStreamCheck;
  tail(endpoint: InferenceEndpoint): StreamGuard;
}

export interface HeldStreamCheck {
  readonly mode: 'hold';
  /** `assembled`: the answer when the caller assembled it (streams that are not OpenAI-shaped). */
  check(collected: Buffer, assembled?: unknown): Promise<{ status: number; body?: unknown; event?: string }>;
}

export function outputGuardrails(
  compiled: CompiledGuardrails,
  before: HooksOutcome | undefined,
  context: Omit<HookContext, 'responseBody'>,
  runtime: GuardrailRuntime,
  request: RequestContext,
): OutputGuardrails {
  const options = runOptionsOf(runtime);
  const check = async (answer: unknown) => {
    const after = compiled.after.length === 0 ? undefined : await runAfterHooks(compiled, { ...context, responseBody: answer }, options);
    logAsync(after, runtime.logger, request.traceId);
    request.guardrailVerdict = verdictOf(before, after);
    return { after, results: hookResultsOf(before, after) };
  };
  return {
    async finishPlain(parsed) {
      const { after, results } = await check(parsed);
      if (after?.denied === true) return { status: GUARDRAIL_DENIED_STATUS, body: deniedBody('output', results) };
      const answer = (after?.responseBody ?? parsed) as Record<string, unknown>;
      const status = verdictOf(before, after) === 'fail' ? GUARDRAIL_FAILED_STATUS : 200;
      return { status, body: { ...answer, hook_results: results } };
    },
    hold: {
      mode: 'hold',
      async check(collected, assembled) {
        let answer = assembled;
        if (answer === undefined) {
          const assembler = new StreamAssembler(context.endpoint);
          assembler.push(collected);
          answer = assembler.result();
        }
        const { after, results } = await check(answer);
        if (after?.denied === true) return { status: GUARDRAIL_DENIED_STATUS, body: deniedBody('output', results) };
        const status = verdictOf(before, after) === 'fail' ? GUARDRAIL_FAILED_STATUS : 200;
        return { status, event: `data: ${JSON.stringify(hookResultsChunk(results))}\n\n` };
      },
    },
    tail: (endpoint) => ({
      mode: 'tail',
      tail: () => new GuardedStreamTail(endpoint, async (answer) => (await check(answer)).results),
    }),
  };
}
