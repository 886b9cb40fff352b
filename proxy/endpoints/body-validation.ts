// Validates inference request bodies before they are routed, so a malformed request
// costs a 400 from the gateway instead of a round trip to a provider.
// The zod schemas are built once at module load; this runs on every request.

import type { z } from 'zod';
import { GatewayError } from '../errors.ts';
import { chatCompletionsBodySchema } from './chat-completions-body.ts';
import { completionsBodySchema } from './completions-body.ts';
import { embeddingsBodySchema } from './embeddings-body.ts';
import { countTokensBodySchema, messagesBodySchema } from './messages-body.ts';
import { responsesBodySchema } from './responses-body.ts';

/**
 * The inference endpoints whose bodies the gateway validates. `messages` and
 * `messages.count_tokens` carry Anthropic-shaped bodies (POST /v1/messages…).
 */
export type InferenceEndpoint = 'chat.completions' | 'completions' | 'embeddings' | 'responses' | 'messages' | 'messages.count_tokens';

const BODY_SCHEMAS: Readonly<Record<InferenceEndpoint, z.ZodType>> = {
  'chat.completions': chatCompletionsBodySchema,
  completions: completionsBodySchema,
  embeddings: embeddingsBodySchema,
  responses: responsesBodySchema,
  messages: messagesBodySchema,
  'messages.count_tokens': countTokensBodySchema,
};

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  record: 'an object',
  null: 'null',
};

/**
 * Readable messages for the issue kinds the body schemas raise; a schema's own
 * message (unions, cross-field rules) takes precedence over this map.
 */
function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'Required';
      return `must be ${TYPE_NAMES[issue.expected] ?? issue.expected}`;
    case 'too_big': {
      const max = String(issue.maximum);
      if (issue.origin === 'array') return `must have at most ${max} items`;
      if (issue.origin === 'string') return `must be at most ${max} characters`;
      return issue.inclusive === false ? `must be less than ${max}` : `must be at most ${max}`;
    }
    case 'too_small': {
      const min = String(issue.minimum);
      if (issue.origin === 'array' || issue.origin === 'string') {
        if (issue.minimum === 1) return 'must not be empty';
        return issue.origin === 'array' ? `must have at least ${min} items` : `must be at least ${min} characters`;
      }
      return issue.inclusive === false ? `must be greater than ${min}` : `must be at least ${min}`;
    }
    case 'invalid_value':
      if (issue.input === undefined) return 'Required';
      return `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_key':
      // The key's own issue went through this map already: "must be at most 64 characters".
      return `key ${issue.issues[0]?.message ?? 'is invalid'}`;
    default:
      return undefined;
  }
}

// Passed to safeParse so the map applies to these schemas only, not zod globally.
const PARSE_CONTEXT = { error: describeIssue } as const;

/** `['messages', 0, 'role']` → `messages[0].role`; `['logit_bias', '50256']` → `logit_bias.50256`. */
export function formatIssuePath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

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
    const result = schema.safeParse(body, PARSE_CONTEXT);
    if (result.success) return undefined;
    const issues = result.error.issues;
    const messages = issues.map((issue) => {
      const path = formatIssuePath(issue.path);
      return path === '' ? issue.message : `${path}: ${issue.message}`;
    });
    const first = issues[0];
    const param = first === undefined || first.path.length === 0 ? null : formatIssuePath(first.path);
    return new GatewayError('AIGW_ERR_INVALID_BODY', messages.join('; '), { param });
  } catch (cause) {
    // Only a hostile body (a throwing getter, a Proxy) gets here; JSON.parse output cannot.
    return new GatewayError('AIGW_ERR_INVALID_BODY', 'request body could not be validated', { param: null, cause });
  }
}
