// Validates inference request bodies before they are routed, so a malformed request
// costs a 400 from the gateway instead of a round trip to a provider.
// The zod schemas are built once at module load; this runs on every request.

import type { z } from 'zod';
import { GatewayError } from '../errors.ts';
import { chatBodyClearlyValid } from './chat-body-fast-check.ts';
import { chatCompletionsBodySchema } from './chat-completions-body.ts';
import { completionsBodySchema } from './completions-body.ts';
import { embeddingsBodySchema } from './embeddings-body.ts';
import type { InferenceEndpoint } from './inference-endpoint.ts';
import { countTokensBodySchema, messagesBodySchema } from './messages-body.ts';
import { countTokensBodyClearlyValid, messagesBodyClearlyValid } from './messages-body-fast-check.ts';
import { responsesBodySchema } from './responses-body.ts';
import { responsesBodyClearlyValid } from './responses-body-fast-check.ts';
import { describeZodIssue, formatIssue, formatIssuePath } from './zod-issues.ts';

const BODY_SCHEMAS: Readonly<Record<InferenceEndpoint, z.ZodType>> = {
  'chat.completions': chatCompletionsBodySchema,
  completions: completionsBodySchema,
  embeddings: embeddingsBodySchema,
  responses: responsesBodySchema,
  messages: messagesBodySchema,
  'messages.count_tokens': countTokensBodySchema,
};

const FAST_CHECKS: Partial<Record<InferenceEndpoint, (body: Record<string, unknown>) => boolean>> = {
  'chat.completions': chatBodyClearlyValid,
  messages: messagesBodyClearlyValid,
  'messages.count_tokens': countTokensBodyClearlyValid,
  responses: responsesBodyClearlyValid,
};

// Passed to safeParse so the house wording applies to these schemas only, not zod globally.
const PARSE_CONTEXT = { error: describeZodIssue } as const;

/**
 * Checks a parsed JSON body against the endpoint's schema.
 * Returns undefined when it is valid, else an AIGW_ERR_INVALID_BODY error whose
 * message lists every issue and whose `param` is the first issue's path. Never throws.
 *
 * @example validateRequestBody('chat.completions', { model: 'm', messages: [] })
 *   // → GatewayError('messages: must not be empty', { param: 'messages' })
 */
export function validateRequestBody(endpoint: InferenceEndpoint, body: unknown): GatewayError | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return new GatewayError('AIGW_ERR_INVALID_BODY', 'request body must be a JSON object', { param: null });
  }
  const schema = BODY_SCHEMAS[endpoint];
  // An endpoint outside the union (from untyped callers) has nothing to check.
  if (schema === undefined) return undefined;
  try {
    // The common chat, Messages and Responses bodies are checked without zod; zod still decides (and words) everything else.
    if (FAST_CHECKS[endpoint]?.(body as Record<string, unknown>) === true) return undefined;
    const result = schema.safeParse(body, PARSE_CONTEXT);
    if (result.success) return undefined;
    const issues = result.error.issues;
    const messages = issues.map((issue) => formatIssue(issue));
    const first = issues[0];
    const param = first === undefined || first.path.length === 0 ? null : formatIssuePath(first.path);
    return new GatewayError('AIGW_ERR_INVALID_BODY', messages.join('; '), { param });
  } catch (cause) {
    // Only a hostile body (a throwing getter, a Proxy) gets here; JSON.parse output cannot.
    return new GatewayError('AIGW_ERR_INVALID_BODY', 'request body could not be validated', { param: null, cause });
  }
}
