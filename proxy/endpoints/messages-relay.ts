import type { FastifyReply } from 'fastify';
import { messagesRelayAdapter } from '../anthropic-ingress/messages-adapter.ts';
import { accountingContext, anthropicDeniedBody } from '../anthropic-ingress/messages-request.ts';
import { MessagesStreamReader } from '../anthropic-ingress/messages-stream-reader.ts';
import { anthropicErrorBody, anthropicErrorType } from '../anthropic-ingress/chat-to-messages.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { RequestContext } from '../request-context.ts';
import type { UpstreamAnswer } from '../upstream/call-target.ts';
import { GUARDRAIL_DENIED_STATUS } from './guardrail-flow.ts';
import type { HeldStreamCheck, OutputGuardrails } from './output-guardrails.ts';
import { relayResponse, type StreamFailure, type StreamGuard } from './relay-response.ts';
import type { AnswerObserver } from './response-caching.ts';

// A /v1/messages answer relayed to the client in Anthropic's shape, whichever provider gave
// it: the provider's adapter wrapped to translate, usage read from the Anthropic events,
// guardrail denials and mid-stream failures as Anthropic errors, fresh answers to the cache.

export function relayMessages(
  reply: FastifyReply,
  endpoint: InferenceEndpoint,
  result: UpstreamAnswer,
  output: OutputGuardrails | undefined,
  observer: AnswerObserver | undefined,
  context: RequestContext,
): Promise<FastifyReply> {
  const reader = new MessagesStreamReader({ collectContent: output !== undefined });
  const native = result.target.adapter.nativeMessages?.accepts(result.requestBody) === true;
  const parsed = result.plain?.parsed as { usage?: unknown } | undefined;
  if (native && parsed !== undefined) reader.noteUsage(parsed.usage);
  const adapter = messagesRelayAdapter(result.target.adapter, result.requestBody, reader);
  const finishPlain = output?.finishPlain;
  return relayResponse(reply, {
    // The relay hands output checks the Anthropic-shaped answer the client gets.
    finishPlain:
      finishPlain === undefined
        ? undefined
        : async (answer) => {
            const verdict = await finishPlain(answer);
            return verdict.status === GUARDRAIL_DENIED_STATUS ? { status: verdict.status, body: anthropicDeniedBody(verdict.body as Record<string, unknown>) } : verdict;
          },
    streamErrorEvent: anthropicStreamErrorEvent,
    observer,
    // Anthropic streams have no [DONE] to hold a tail on: output checks hold the stream.
    streamGuard: output === undefined ? undefined : messagesHold(output.hold, reader),
    upstream: result.response,
    target: { ...result.target, adapter },
    endpoint,
    requestBody: result.requestBody,
    plain: result.plain,
    streamIdleTimeoutMs: result.timeoutMs,
    context: accountingContext(context, reader),
  });
}


/**
 * Output checks on a /v1/messages stream: the held bytes were read as they passed, the
 * assembled Message is checked; a denial is an Anthropic-shaped 446, a pass sends the
 * stream unchanged (no hook_results event: Anthropic streams have no place for one).
 */
function messagesHold(hold: HeldStreamCheck, reader: MessagesStreamReader): StreamGuard {
  return {
    mode: 'hold',
    async check(collected) {
      const verdict = await hold.check(collected, reader.result());
      if (verdict.body !== undefined) return { status: verdict.status, body: anthropicDeniedBody(verdict.body as Record<string, unknown>) };
      return { status: verdict.status };
    },
  };
}

/** A stall or oversize event mid-stream as Anthropic words it: an `error` event, which its SDKs raise. */
function anthropicStreamErrorEvent(failure: StreamFailure): string {
  const body = anthropicErrorBody(anthropicErrorType(failure.status), failure.message);
  return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
}
