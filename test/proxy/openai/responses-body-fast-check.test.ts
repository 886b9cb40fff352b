import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { responsesBodyClearlyValid } from '../../../proxy/openai/responses-body-fast-check.ts';
import { responsesBodySchema } from '../../../proxy/openai/responses-body.ts';
import { assertFixturesAgree, mutatedBodies } from '../../helpers/mutated-bodies.ts';

// The Responses fast check may only say "valid" where zod does; it should for Codex's turns.

function zodAccepts(body: unknown): boolean {
  return responsesBodySchema.safeParse(body).success;
}

// Values each field is tried with: good ones, bad ones, edge ones.
const POOL: readonly unknown[] = [
  undefined, null, true, false, 0, -0, 1, 2, 3, -1, 0.5, 1.5, 2 ** 53, 2 ** 53 - 1, 1e300, 0.1,
  '', 'x', 'auto', 'disabled', 'none', 'required', 'reasoning.encrypted_content', [], ['a'], [1], {}, { a: 'b' }, { effort: 'low' },
  ['reasoning.encrypted_content', 'message.output_text.logprobs'], ['unknown.include'], [{ type: 'function', name: 'f' }], [{ type: 2 }], [{}], [null],
  [{ type: 'message', role: 'user', content: 'hi' }], { type: 'function', name: 'f' },
];
const FIELDS = [
  'model', 'input', 'metadata', 'temperature', 'top_p', 'user', 'previous_response_id', 'reasoning', 'max_output_tokens', 'instructions', 'text',
  'tools', 'tool_choice', 'truncation', 'include', 'parallel_tool_calls', 'store', 'stream', 'other',
];

/** A Codex turn: instructions, input items with function calls and their output, tools, reasoning. */
function codexTurn(): Record<string, unknown> {
  return {
    model: 'gpt-5-codex',
    instructions: 'You are Codex.',
    input: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list files' }] },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"cmd":["ls"]}' },
      { type: 'function_call_output', call_id: 'c1', output: 'a.ts' },
    ],
    tools: [{ type: 'function', name: 'shell', strict: false, parameters: { type: 'object', properties: {} } }, { type: 'web_search' }],
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { effort: 'medium', summary: 'auto' },
    store: false,
    stream: true,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: 'k',
    text: { verbosity: 'low' },
  };
}

describe('responsesBodyClearlyValid', () => {
  it('says valid for Codex\'s turn and a plain text input', () => {
    for (const body of [codexTurn(), { model: 'm', input: 'hi' }, { model: 'm', input: [], truncation: 'disabled', max_output_tokens: 0, temperature: 2 }]) {
      assert.equal(zodAccepts(body), true, JSON.stringify(body));
      assert.equal(responsesBodyClearlyValid(body), true, JSON.stringify(body));
    }
  });

  it('never says valid where zod refuses: the fixtures', () => {
    assertFixturesAgree('responses', responsesBodyClearlyValid, zodAccepts);
  });

  it('never says valid where zod refuses: 20,000 generated bodies', () => {
    let taken = 0;
    for (const body of mutatedBodies(11, { model: 'm', input: 'hi' }, FIELDS, POOL, 20_000)) {
      if (!responsesBodyClearlyValid(body)) continue;
      taken++;
      assert.equal(zodAccepts(body), true, JSON.stringify(body));
    }
    assert.ok(taken > 1_000, `the fast path took only ${taken} bodies`);
  });
});
