import { RESPONSE_INCLUDE_VALUES } from './responses-body.ts';
import { intOk, isObject, rangeOk, toolChoiceOk, toolsOk } from './chat-body-fast-check.ts';

// The Responses API's counterpart of chat-body-fast-check.ts. Codex sends its instructions,
// whole input and tools with every turn: zod's safeParse of such a body (31 KB, 90 input
// items, 20 tools) cost 20–27 µs a request. It only ever says "valid" for a body
// responsesBodySchema accepts; anything it does not know for sure (metadata, among others)
// goes to zod, which writes the error messages
// (test/proxy/openai/responses-body-fast-check.test.ts compares the two).

const INCLUDE: ReadonlySet<unknown> = new Set(RESPONSE_INCLUDE_VALUES);

/** Absent, null or a boolean (parallel_tool_calls, store, stream). */
function nullableBooleanOk(value: unknown): boolean {
  return value === undefined || value === null || typeof value === 'boolean';
}

/** Absent, null or a string (previous_response_id, instructions). */
function nullableStringOk(value: unknown): boolean {
  return value === undefined || value === null || typeof value === 'string';
}

function includeOk(include: unknown): boolean {
  if (include === undefined || include === null) return true;
  if (!Array.isArray(include)) return false;
  for (const item of include) if (!INCLUDE.has(item)) return false;
  return true;
}

/** True only when responsesBodySchema accepts `body`; false means "ask zod". */
export function responsesBodyClearlyValid(body: Record<string, unknown>): boolean {
  const model = body['model'];
  if (typeof model !== 'string' || model.length === 0) return false;
  const input = body['input'];
  if (typeof input !== 'string' && !Array.isArray(input)) return false;
  const metadata = body['metadata'];
  if (metadata !== undefined && metadata !== null) return false;
  const user = body['user'];
  if (user !== undefined && typeof user !== 'string') return false;
  const reasoning = body['reasoning'];
  if (reasoning !== undefined && reasoning !== null && !isObject(reasoning)) return false;
  const text = body['text'];
  if (text !== undefined && !isObject(text)) return false;
  const truncation = body['truncation'];
  if (truncation !== undefined && truncation !== null && truncation !== 'auto' && truncation !== 'disabled') return false;
  return (
    rangeOk(body['temperature'], 0, 2) &&
    rangeOk(body['top_p'], 0, 1) &&
    intOk(body['max_output_tokens'], 0, Number.MAX_SAFE_INTEGER) &&
    nullableStringOk(body['previous_response_id']) &&
    nullableStringOk(body['instructions']) &&
    toolsOk(body['tools']) &&
    toolChoiceOk(body['tool_choice']) &&
    includeOk(body['include']) &&
    nullableBooleanOk(body['parallel_tool_calls']) &&
    nullableBooleanOk(body['store']) &&
    nullableBooleanOk(body['stream'])
  );
}
