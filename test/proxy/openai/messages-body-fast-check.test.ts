import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countTokensBodyClearlyValid, messagesBodyClearlyValid } from '../../../proxy/openai/messages-body-fast-check.ts';
import { countTokensBodySchema, messagesBodySchema } from '../../../proxy/openai/messages-body.ts';
import { assertFixturesAgree, mutatedBodies } from '../../helpers/mutated-bodies.ts';

// The Messages fast checks may only say "valid" where zod does; they should for Claude Code's turns.

const CHECKS = [
  { endpoint: 'messages', fast: messagesBodyClearlyValid, zod: (body: unknown) => messagesBodySchema.safeParse(body).success },
  { endpoint: 'messages.count_tokens', fast: countTokensBodyClearlyValid, zod: (body: unknown) => countTokensBodySchema.safeParse(body).success },
] as const;

const USER = { role: 'user', content: 'hi' };
const TEXT = { type: 'text', text: 'x' };
// Values each field is tried with: good ones, bad ones, edge ones.
const POOL: readonly unknown[] = [
  undefined, null, true, false, 0, -0, 1, 2, -1, 0.5, 1.5, 2 ** 53, 2 ** 53 - 1, 1e300, -1e300, 0.1,
  '', 'x', 'user', 'assistant', 'auto', [], ['a'], [1], {}, { a: 1 }, [TEXT], [TEXT, { type: '' }], [{}], [{ type: 3 }], [null],
  [USER], [{ role: 'system', content: 'x' }], [{ role: 'user', content: [] }], [{ role: 'user', content: [TEXT] }], [{ role: 'user', content: 5 }],
  [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'n', input: {} }] }], [{ role: 'user' }], [[USER]],
  [{ name: 'read', input_schema: { type: 'object' } }], [{ name: '' }], [{ type: 'web_search' }], { type: 'auto' }, { type: '' }, { type: 'enabled', budget_tokens: 1024 },
];
const FIELDS = [
  'model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'max_tokens', 'stream', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'metadata', 'other',
];

/** A Claude Code turn: system blocks, tools, tool use and results, thinking, metadata. */
function agentTurn(): Record<string, unknown> {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 32_000,
    stream: true,
    system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [TEXT] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: '…', signature: 's' }, { type: 'tool_use', id: 'tu_1', name: 'read', input: { path: 'a.ts' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'text' }] },
      { role: 'user', content: 'go on' },
    ],
    tools: [{ name: 'read', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }, { type: 'web_search_20250305', name: 'web_search' }],
    tool_choice: { type: 'auto' },
    thinking: { type: 'enabled', budget_tokens: 10_000 },
    metadata: { user_id: 'u' },
    temperature: 1,
    top_k: 0,
    stop_sequences: [],
  };
}

describe('Messages body fast checks', () => {
  it('say valid for Claude Code\'s turn and the minimal bodies', () => {
    for (const { fast, zod } of CHECKS) {
      for (const body of [agentTurn(), { model: 'm', max_tokens: 1, messages: [USER] }, { model: 'm', max_tokens: 1, messages: [USER], system: '' }]) {
        assert.equal(zod(body), true, JSON.stringify(body));
        assert.equal(fast(body), true, JSON.stringify(body));
      }
    }
  });

  it('never say valid where zod refuses: the fixtures', () => {
    for (const { endpoint, fast, zod } of CHECKS) assertFixturesAgree(endpoint, fast, zod);
  });

  it('never say valid where zod refuses: 20,000 generated bodies each', () => {
    for (const { fast, zod } of CHECKS) {
      let taken = 0;
      for (const body of mutatedBodies(7, { model: 'm', max_tokens: 16, messages: [USER] }, FIELDS, POOL, 20_000)) {
        if (!fast(body)) continue;
        taken++;
        assert.equal(zod(body), true, JSON.stringify(body));
      }
      assert.ok(taken > 1_000, `the fast path took only ${taken} bodies`);
    }
  });
});
