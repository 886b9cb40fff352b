import { StreamAssembler } from '../cache/stream-assembler.ts';
import { hookResultsChunk } from '../guardrails/hook-results-chunk.ts';
import type { HookContext } from '../guardrails/run-hooks.ts';
import type { IngressTranslator } from '../ingress/ingress-translator.ts';
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
  type HookResultsBody,
  type HooksOutcome,
} from './guardrail-flow.ts';
import type { StreamGuard } from './relay-response.ts';

// Output guardrails on one answer, in the three forms the relay takes them: a plain
// answer's replacement (246 / 446 + hook_results), a held stream's check, a stream's tail.
// Denials are worded, and streamed answers read, as the request's client protocol has them.

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
  ingress: IngressTranslator,
): OutputGuardrails {
  const options = runOptionsOf(runtime);
  ingress.collectStreamedAnswer();
  const check = async (answer: unknown) => {
    const after = compiled.after.length === 0 ? undefined : await runAfterHooks(compiled, { ...context, responseBody: answer }, options);
    logAsync(after, runtime.logger, request.traceId);
    request.guardrailVerdict = verdictOf(before, after);
    return { after, results: hookResultsOf(before, after) };
  };
  return {
    async finishPlain(parsed) {
      const { after, results } = await check(parsed);
      if (after?.denied === true) return deniedAnswer(ingress, results);
      const answer = (after?.responseBody ?? parsed) as Record<string, unknown>;
      const status = verdictOf(before, after) === 'fail' ? GUARDRAIL_FAILED_STATUS : 200;
      return { status, body: { ...answer, hook_results: results } };
    },
    hold: {
      mode: 'hold',
      async check(collected, assembled) {
        let answer = ingress.streamedAnswer() ?? assembled;
        if (answer === undefined) {
          const assembler = new StreamAssembler(context.endpoint);
          assembler.push(collected);
          answer = assembler.result();
        }
        const { after, results } = await check(answer);
        if (after?.denied === true) return deniedAnswer(ingress, results);
        const status = verdictOf(before, after) === 'fail' ? GUARDRAIL_FAILED_STATUS : 200;
        // A stream with no place for hook_results (Anthropic's) passes unchanged.
        return ingress.streamResultsTail ? { status, event: `data: ${JSON.stringify(hookResultsChunk(results))}\n\n` } : { status };
      },
    },
    tail: (endpoint) => ({
      mode: 'tail',
      tail: () => new GuardedStreamTail(endpoint, async (answer) => (await check(answer)).results),
    }),
  };
}

/** An output denial: a 446 in the client protocol's error shape, with hook_results. */
function deniedAnswer(ingress: IngressTranslator, results: HookResultsBody): { status: number; body: Record<string, unknown> } {
  return { status: GUARDRAIL_DENIED_STATUS, body: ingress.deniedBody(deniedBody('output', results)) };
}
