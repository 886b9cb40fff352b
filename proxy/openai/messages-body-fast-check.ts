// The Messages API's counterpart of chat-body-fast-check.ts. Claude Code sends its whole
// conversation, system prompt and tools with every turn: zod's safeParse of such a body
// (34 KB, 91 messages, 20 tools) cost 150–180 µs a request, this a few. It only ever says
// "valid" for a body messagesBodySchema (or countTokensBodySchema) accepts; anything it does
// not know for sure goes to zod, which writes the error messages
// (test/proxy/openai/messages-body-fast-check.test.ts compares the two).

import { isObject } from './chat-body-fast-check.ts';

function nonEmptyString(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0;
}

/** An object with a non-empty string at `key` (a content block, a tool, tool_choice, thinking). */
function namedObject(value: unknown, key: string): boolean {
  return isObject(value) && nonEmptyString(value[key]);
}

function blocksOk(blocks: readonly unknown[]): boolean {
  for (const block of blocks) if (!namedObject(block, 'type')) return false;
  return true;
}

function messagesOk(messages: unknown): boolean {
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const message of messages) {
    if (!isObject(message)) return false;
    const role = message['role'];
    if (role !== 'user' && role !== 'assistant') return false;
    const content = message['content'];
    if (typeof content === 'string') continue;
    if (!Array.isArray(content) || content.length === 0 || !blocksOk(content)) return false;
  }
  return true;
}

/** Absent, or a number in [0, 1] (temperature, top_p). */
function unitOk(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && value >= 0 && value <= 1);
}

/** The fields count_tokens and messages share. */
function sharedOk(body: Record<string, unknown>): boolean {
  if (!nonEmptyString(body['model']) || !messagesOk(body['messages'])) return false;
  const system = body['system'];
  if (system !== undefined && typeof system !== 'string' && !(Array.isArray(system) && blocksOk(system))) return false;
  const tools = body['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return false;
    for (const tool of tools) if (!namedObject(tool, 'name')) return false;
  }
  const choice = body['tool_choice'];
  if (choice !== undefined && !namedObject(choice, 'type')) return false;
  const thinking = body['thinking'];
  return thinking === undefined || namedObject(thinking, 'type');
}

/** True only when countTokensBodySchema accepts `body`; false means "ask zod". */
export function countTokensBodyClearlyValid(body: Record<string, unknown>): boolean {
  return sharedOk(body);
}

/** True only when messagesBodySchema accepts `body`; false means "ask zod". */
export function messagesBodyClearlyValid(body: Record<string, unknown>): boolean {
  if (!sharedOk(body)) return false;
  const maxTokens = body['max_tokens'];
  if (!(Number.isSafeInteger(maxTokens) && (maxTokens as number) >= 1)) return false;
  const stream = body['stream'];
  if (stream !== undefined && typeof stream !== 'boolean') return false;
  if (!unitOk(body['temperature']) || !unitOk(body['top_p'])) return false;
  const topK = body['top_k'];
  if (topK !== undefined && !(Number.isSafeInteger(topK) && (topK as number) >= 0)) return false;
  const stops = body['stop_sequences'];
  if (stops !== undefined) {
    if (!Array.isArray(stops)) return false;
    for (const stop of stops) if (typeof stop !== 'string') return false;
  }
  const metadata = body['metadata'];
  return metadata === undefined || isObject(metadata);
}
