import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chatBodyClearlyValid } from '../../../proxy/openai/chat-body-fast-check.ts';
import { chatCompletionsBodySchema } from '../../../proxy/openai/chat-completions-body.ts';
import { assertFixturesAgree, mutatedBodies } from '../../helpers/mutated-bodies.ts';

// The fast check may only say "valid" where zod does; it should say so for common bodies.

function zodAccepts(body: unknown): boolean {
  return chatCompletionsBodySchema.safeParse(body).success;
}

const MESSAGE = { role: 'user', content: 'hi' };
// Values each field is tried with: good ones, bad ones, edge ones.
const POOL: readonly unknown[] = [
  undefined, null, true, false, 0, -0, 1, 2, 3, -1, -2, -3, 0.5, 1.5, 128, 129, 2 ** 53, 2 ** 53 - 1, 2 ** 63, -(2 ** 63), 1e300, -1e300, 0.1,
  '', 'x', 'auto', 'user', [], ['a'], ['a', 'b', 'c', 'd'], ['a', 'b', 'c', 'd', 'e'], [1], {}, { include_usage: true }, [MESSAGE], [{ role: 'robot' }],
  [{ role: 'user', content: 5 }], [{ role: 'assistant' }], [{ role: 'tool', content: null }], [{ role: 'user', content: [{ type: 'text' }] }], [[MESSAGE]], [null],
  // tools and tool_choice
  'none', 'required', 'any', [{ type: 'function', function: { name: 'f' } }], [{ type: 'function' }, { type: 'web_search' }], [{ type: 1 }], [{}], [{ function: {} }],
  [{ type: null }], [{ type: 'function' }, null], [{ type: 'function' }, ['x']], { type: 'function', function: { name: 'f' } }, { type: 'auto' },
];
const FIELDS = [
  'model', 'messages', 'temperature', 'top_p', 'frequency_penalty', 'presence_penalty', 'logit_bias', 'n', 'logprobs', 'top_logprobs',
  'max_tokens', 'max_completion_tokens', 'stop', 'stream', 'stream_options', 'seed', 'tools', 'tool_choice', 'user', 'other',
];

describe('chatBodyClearlyValid', () => {
  it('says valid for the harness body and common shapes', () => {
    const bodies = [
      {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are a helpful assistant.' },
          { role: 'user', content: 'Summarise the benefits of connection pooling.' },
        ],
        temperature: 0.2,
        max_tokens: 128,
      },
      { model: 'm', messages: [MESSAGE], stream: true, stream_options: { include_usage: true }, user: 'u', seed: 42, stop: ['a'], n: 1 },
      { model: 'm', messages: [{ role: 'assistant', content: null }, { role: 'user', content: [{ type: 'text', text: 'x' }] }], metadata: { a: 1 } },
      // A coding agent's turn: tools, tool calls and their results.
      {
        model: 'm',
        messages: [
          MESSAGE,
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'text' },
        ],
        tools: [{ type: 'function', function: { name: 'read', parameters: { type: 'object', properties: {} } } }, { type: 'web_search' }],
        tool_choice: 'auto',
        stream: true,
      },
      { model: 'm', messages: [MESSAGE], tools: [], tool_choice: { type: 'function', function: { name: 'read' } } },
    ];
    for (const body of bodies) {
      assert.equal(chatBodyClearlyValid(body), true, JSON.stringify(body));
      assert.equal(zodAccepts(body), true);
    }
  });

  it('never says valid where zod refuses: the fixtures', () => {
    assertFixturesAgree('chat.completions', chatBodyClearlyValid, zodAccepts);
  });

  it('leaves every malformed tools and tool_choice to zod', () => {
    const bad: readonly Record<string, unknown>[] = [
      { tools: null }, { tools: {} }, { tools: 'x' }, { tools: [null] }, { tools: [{}] }, { tools: [{ type: 2 }] }, { tools: [['function']] },
      { tool_choice: null }, { tool_choice: 'any' }, { tool_choice: [] }, { tool_choice: 3 },
    ];
    for (const extra of bad) {
      const body = { model: 'm', messages: [MESSAGE], ...extra };
      assert.equal(chatBodyClearlyValid(body), false, JSON.stringify(extra));
      assert.equal(zodAccepts(body), false, JSON.stringify(extra));
    }
  });

  it('never says valid where zod refuses: 20,000 generated bodies', () => {
    let fast = 0;
    for (const body of mutatedBodies(32, { model: 'm', messages: [MESSAGE] }, FIELDS, POOL, 20_000)) {
      if (!chatBodyClearlyValid(body)) continue;
      fast++;
      assert.equal(zodAccepts(body), true, JSON.stringify(body));
    }
    assert.ok(fast > 1_000, `the fast path took only ${fast} bodies`);
  });
});
