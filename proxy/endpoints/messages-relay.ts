import type { FastifyReply } from 'fastify';
import type { MessagesIngress } from '../ingress/anthropic-messages/messages-ingress.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { RequestContext } from '../request-context.ts';
import type { UpstreamAnswer } from '../upstream/call-target.ts';
import { GUARDRAIL_DENIED_STATUS } from './guardrail-flow.ts';
import type { HeldStreamCheck, OutputGuardrails } from './output-guardrails.ts';
import { relayResponse, type StreamGuard } from './relay-response.ts';
import type { AnswerObserver } from './response-caching.ts';

// A /v1/messages answer relayed to the client in Anthropic's shape, whichever provider gave
// it: the request's ingress translator turns the answer back and reads its usage;
// guardrail denials come out as Anthropic errors, fresh answers go to the cache.

export function relayMessages(
  reply: FastifyReply,
  endpoint: InferenceEndpoint,
  result: UpstreamAnswer,
  ingress: MessagesIngress,
  output: OutputGuardrails | undefined,
  observer: AnswerObserver | undefined,
  context: RequestContext,
): Promise<FastifyReply> {
  if (output !== undefined) ingress.collectContent();
  const finishPlain = output?.finishPlain;
  return relayResponse(reply, {
    // The relay hands output checks the Anthropic-shaped answer the client gets.
    finishPlain:
      finishPlain === undefined
        ? undefined
        : async (answer) => {
            const verdict = await finishPlain(answer);
            return verdict.status === GUARDRAIL_DENIED_STATUS ? { status: verdict.status, body: ingress.deniedBody(verdict.body as Record<string, unknown>) } : verdict;
          },
    observer,
    // Anthropic streams have no [DONE] to hold a tail on: output checks hold the stream.
    streamGuard: output === undefined ? undefined : messagesHold(output.hold, ingress),
    upstream: result.response,
    target: { ...result.target, adapter: ingress.answerAdapter(result.target, result.requestBody) },
    endpoint,
    requestBody: result.requestBody,
    plain: result.plain,
    streamIdleTimeoutMs: result.timeoutMs,
    ingress,
    context,
  });
}

/**
 * Output checks on a /v1/messages stream: the held bytes were read as they passed, the
 * assembled Message is checked; a denial is an Anthropic-shaped 446, a pass sends the
 * stream unchanged (no hook_results event: Anthropic streams have no place for one).
 */
function messagesHold(hold: HeldStreamCheck, ingress: MessagesIngress): StreamGuard {
  return {
    mode: 'hold',
    async check(collected) {
      const verdict = await hold.check(collected, ingress.streamedMessage());
      if (verdict.body !== undefined) return { status: verdict.status, body: ingress.deniedBody(verdict.body as Record<string, unknown>) };
      return { status: verdict.status };
    },
  };
}
