// default.webhook: POSTs the request (and, after the call, the answer) to a URL the user
// runs; its JSON answer decides. `{ "verdict": true }` passes; `transformedData.request.json`
// (before) or `transformedData.response.json` (after) replaces the body under check. A
// timeout, a non-2xx status or an unreadable answer is a check error (passes unless the
// hook sets fail_on_error). The engine's `fetch` is used, so the caller decides which
// egress policy applies (pass a fetch bound to the guarded upstream agent).

import { z } from 'zod';
import { defineCheck, type CheckInput } from './check-definition.ts';

/** The longest webhook answer read (bytes); a longer one is an error. */
export const MAX_WEBHOOK_ANSWER_BYTES = 1_048_576;

/** What the webhook receives. */
export interface WebhookPayload {
  readonly eventType: 'beforeRequestHook' | 'afterRequestHook';
  readonly endpoint: string;
  readonly request: { readonly json: Record<string, unknown>; readonly text?: string };
  readonly response?: { readonly json: unknown; readonly text: string };
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly model: string | undefined;
  readonly provider: string | undefined;
}

const WebhookAnswerSchema = z.looseObject({
  verdict: z.boolean(),
  transformedData: z
    .looseObject({
      request: z.looseObject({ json: z.record(z.string(), z.unknown()) }).optional(),
      response: z.looseObject({ json: z.unknown() }).optional(),
    })
    .optional(),
  data: z.unknown().optional(),
});

export function webhookPayload(input: CheckInput): WebhookPayload {
  const common = { endpoint: input.endpoint, metadata: input.metadata, model: input.model, provider: input.provider };
  if (input.phase === 'before') {
    return { eventType: 'beforeRequestHook', request: { json: input.requestBody, text: input.text }, ...common };
  }
  return {
    eventType: 'afterRequestHook',
    request: { json: input.requestBody },
    response: { json: input.responseBody, text: input.text },
    ...common,
  };
}

async function readCapped(response: Response): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > MAX_WEBHOOK_ANSWER_BYTES) {
    await response.body?.cancel();
    throw new Error(`webhook answer is ${declared} bytes, over ${MAX_WEBHOOK_ANSWER_BYTES}`);
  }
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_WEBHOOK_ANSWER_BYTES) {
      await response.body.cancel().catch(() => undefined);
      throw new Error(`webhook answer is over ${MAX_WEBHOOK_ANSWER_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export const webhookCheck = defineCheck({
  id: 'default.webhook',
  parameters: z.strictObject({
    webhookURL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    headers: z.record(z.string(), z.string()).optional(),
    /** Milliseconds; the engine's default when absent. */
    timeout: z.int().min(1).max(300_000).optional(),
  }),
  mayTransform: () => true,
  prepare({ webhookURL, headers, timeout }) {
    return async (input) => {
      const timeoutMs = timeout ?? input.webhookTimeoutMs;
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = input.signal === undefined ? deadline : AbortSignal.any([input.signal, deadline]);
      let answerText: string;
      let status: number;
      try {
        const response = await input.fetch(webhookURL, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(webhookPayload(input)),
          redirect: 'error',
          signal,
        });
        status = response.status;
        if (!response.ok) {
          await response.body?.cancel().catch(() => undefined);
          throw new Error(`webhook answered with status ${status}`);
        }
        answerText = await readCapped(response);
      } catch (error) {
        if (deadline.aborted) throw new Error(`webhook timed out after ${timeoutMs} ms`, { cause: error });
        if (input.signal?.aborted === true) throw new Error('request aborted before the webhook answered', { cause: error });
        throw error;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(answerText);
      } catch {
        throw new Error('webhook answer is not JSON');
      }
      const answer = WebhookAnswerSchema.safeParse(parsed);
      if (!answer.success) throw new Error('webhook answer must be an object with a boolean "verdict"');
      const { verdict, transformedData, data } = answer.data;
      const body = input.phase === 'before' ? transformedData?.request?.json : transformedData?.response?.json;
      return {
        verdict,
        data: { webhookURL, status, ...(data === undefined ? {} : { response: data }) },
        ...(body === undefined ? {} : { body }),
      };
    };
  },
});
