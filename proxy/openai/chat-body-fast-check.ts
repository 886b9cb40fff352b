import { CHAT_MESSAGE_ROLES } from './chat-completions-body.ts';

// A cheap check that a chat completions body is valid, for the common shape (model,
// messages, the sampling and token fields): zod's safeParse cost ≈ 13 µs a request, this
// well under 1. It only ever says "valid" for a body chatCompletionsBodySchema accepts;
// anything it does not know for sure (a field it does not check, a bad value) goes to zod,
// which writes the error messages (test/proxy/openai/chat-body-fast-check.test.ts compares
// the two on every fixture and on random bodies).

const ROLES: ReadonlySet<unknown> = new Set(CHAT_MESSAGE_ROLES);
const INT64_BOUND = 9223372036854776000;

// Fields of the schema this check does not read: any of them present sends the body to zod.
const UNCHECKED_FIELDS = ['logit_bias', 'top_logprobs'] as const;

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A finite number in [min, max], null, or absent. */
export function rangeOk(value: unknown, min: number, max: number): boolean {
  return value === undefined || value === null || (typeof value === 'number' && value >= min && value <= max);
}

/** z.int().min(min).max(max).nullable().optional(). */
export function intOk(value: unknown, min: number, max: number): boolean {
  return value === undefined || value === null || (Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max);
}

function messagesOk(messages: unknown): boolean {
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const message of messages) {
    if (!isObject(message) || !ROLES.has(message['role'])) return false;
    const content = message['content'];
    if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content)) return false;
  }
  return true;
}

/** shared-fields.ts's `tools`: absent, or an array of objects each with a string `type`. */
export function toolsOk(tools: unknown): boolean {
  if (tools === undefined) return true;
  if (!Array.isArray(tools)) return false;
  for (const tool of tools) if (!isObject(tool) || typeof tool['type'] !== 'string') return false;
  return true;
}

/** shared-fields.ts's `toolChoice`: absent, none / auto / required, or an object. */
export function toolChoiceOk(choice: unknown): boolean {
  return choice === undefined || choice === 'none' || choice === 'auto' || choice === 'required' || isObject(choice);
}

function stopOk(stop: unknown): boolean {
  if (stop === undefined || stop === null || typeof stop === 'string') return true;
  if (!Array.isArray(stop) || stop.length > 4) return false;
  for (const item of stop) if (typeof item !== 'string') return false;
  return true;
}

/** True only when chatCompletionsBodySchema accepts `body`; false means "ask zod". */
export function chatBodyClearlyValid(body: Record<string, unknown>): boolean {
  const model = body['model'];
  if (typeof model !== 'string' || model.length === 0 || !messagesOk(body['messages'])) return false;
  for (const field of UNCHECKED_FIELDS) if (body[field] !== undefined) return false;
  // A coding agent sends tools with every turn: through zod they cost tens of µs a request.
  if (!toolsOk(body['tools']) || !toolChoiceOk(body['tool_choice'])) return false;
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') return false;
  const streamOptions = body['stream_options'];
  // Only with stream: true (the schema's refinement), and an object.
  if (streamOptions !== undefined && streamOptions !== null && (stream !== true || !isObject(streamOptions))) return false;
  const logprobs = body['logprobs'];
  if (logprobs !== undefined && logprobs !== null && typeof logprobs !== 'boolean') return false;
  const user = body['user'];
  if (user !== undefined && typeof user !== 'string') return false;
  const seed = body['seed'];
  if (seed !== undefined && seed !== null && !(Number.isInteger(seed) && (seed as number) >= -INT64_BOUND && (seed as number) <= INT64_BOUND)) return false;
  return (
    rangeOk(body['temperature'], 0, 2) &&
    rangeOk(body['top_p'], 0, 1) &&
    rangeOk(body['frequency_penalty'], -2, 2) &&
    rangeOk(body['presence_penalty'], -2, 2) &&
    intOk(body['n'], 1, 128) &&
    intOk(body['max_tokens'], 0, Number.MAX_SAFE_INTEGER) &&
    intOk(body['max_completion_tokens'], 0, Number.MAX_SAFE_INTEGER) &&
    stopOk(body['stop'])
  );
}
