import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { InferenceEndpoint } from '../../../proxy/openai/inference-endpoint.ts';
import { mapRequestText, mapResponseText, requestText, requestTexts, responseText } from '../../../proxy/guardrails/guardrail-text.ts';

const requests: Array<[InferenceEndpoint, Record<string, unknown>, string[]]> = [
  [
    'chat.completions',
    {
      model: 'm',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: [{ type: 'text', text: 'part' }, { type: 'image_url', image_url: { url: 'u' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 't' }] },
        { role: 'tool', content: 'tool out', tool_call_id: 't' },
      ],
    },
    ['sys', 'part', 'tool out'],
  ],
  ['completions', { model: 'm', prompt: 'one' }, ['one']],
  ['completions', { model: 'm', prompt: ['a', 'b'] }, ['a', 'b']],
  ['completions', { model: 'm', prompt: [1, 2, 3] }, []],
  ['embeddings', { model: 'm', input: ['x', 'y'] }, ['x', 'y']],
  ['responses', { model: 'm', instructions: 'be brief', input: 'hi' }, ['be brief', 'hi']],
  [
    'responses',
    {
      model: 'm',
      input: [
        { role: 'user', content: 'plain' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'typed' }, { type: 'input_image', image_url: 'u' }] },
        { type: 'function_call_output', call_id: 'c', output: 'not text' },
      ],
    },
    ['plain', 'typed'],
  ],
];

describe('request text', () => {
  for (const [endpoint, body, expected] of requests) {
    it(`reads ${endpoint} ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(requestTexts(endpoint, body), expected);
      assert.equal(requestText(endpoint, body), expected.join('\n'));
    });
    it(`rewrites ${endpoint} ${JSON.stringify(expected)} without touching the original`, () => {
      const snapshot = structuredClone(body);
      const rewritten = mapRequestText(endpoint, body, (text) => text.toUpperCase());
      assert.deepEqual(body, snapshot);
      assert.deepEqual(requestTexts(endpoint, rewritten), expected.map((text) => text.toUpperCase()));
      assert.equal(mapRequestText(endpoint, body, (text) => text), body, 'unchanged keeps the reference');
    });
  }
});

const answers: Array<[InferenceEndpoint, unknown, string]> = [
  [
    'chat.completions',
    { choices: [{ message: { role: 'assistant', content: 'first' } }, { message: { role: 'assistant', content: [{ type: 'text', text: 'second' }] } }] },
    'first\nsecond',
  ],
  ['completions', { choices: [{ text: 'done' }] }, 'done'],
  ['embeddings', { data: [{ embedding: [0.1] }] }, ''],
  [
    'responses',
    {
      output: [
        { type: 'reasoning', summary: [] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'out' }, { type: 'refusal', refusal: 'no' }] },
      ],
    },
    'out',
  ],
  ['chat.completions', { error: { message: 'x' } }, ''],
  ['chat.completions', null, ''],
];

describe('response text', () => {
  for (const [endpoint, body, expected] of answers) {
    it(`reads ${endpoint} ${JSON.stringify(expected)}`, () => {
      assert.equal(responseText(endpoint, body), expected);
    });
  }

  it('rewrites only the texts of an answer', () => {
    const body = { id: 'r', output: [{ type: 'message', content: [{ type: 'output_text', text: 'a', annotations: [] }] }] };
    assert.deepEqual(mapResponseText('responses', body, (text) => `${text}!`), {
      id: 'r',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'a!', annotations: [] }] }],
    });
  });
});
