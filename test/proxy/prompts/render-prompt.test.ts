import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../../../proxy/errors.ts';
import { PROMPT_PARAMETER_KEYS, PromptEntrySchema } from '../../../proxy/prompts/prompt-schema.ts';
import type { PromptEntry } from '../../../proxy/prompts/prompt-schema.ts';
import { promptVariablesOf, renderPrompt } from '../../../proxy/prompts/render-prompt.ts';

// Entries go through the schema, as the state loader would parse them.
function prompt(entry: Record<string, unknown>): PromptEntry {
  return PromptEntrySchema.parse({ id: 'test', model: 'gpt-4o-mini', ...entry });
}

function user(content: string): PromptEntry {
  return prompt({ messages: [{ role: 'user', content }] });
}

const WELCOME = prompt({
  messages: [
    { role: 'system', content: 'You are a {{tone}} assistant for {{company}}.' },
    { role: 'user', content: 'Hello, I am {{name}}.', name: 'customer' },
  ],
  parameters: { temperature: 0.2, max_tokens: 100, stop: ['\n\n'] },
});

function render(entry: PromptEntry, body: unknown): Record<string, unknown> {
  const result = renderPrompt(entry, body);
  if (!result.ok) assert.fail(`expected success, got ${result.error.message}`);
  return result.data;
}

function reject(entry: PromptEntry, body: unknown): GatewayError {
  const result = renderPrompt(entry, body);
  if (result.ok) assert.fail(`expected an error, got ${JSON.stringify(result.data)}`);
  assert.ok(result.error instanceof GatewayError);
  assert.equal(result.error.code, 'AIGW_ERR_INVALID_BODY');
  assert.equal(result.error.status, 400);
  return result.error;
}

function contentOf(entry: PromptEntry, variables: Record<string, unknown>): string {
  const messages = render(entry, { variables }).messages as Array<{ content: string }>;
  return messages.map((message) => message.content).join('|');
}

describe('renderPrompt', () => {
  it('fills variables in system and user messages and keeps names', () => {
    const data = render(WELCOME, { variables: { tone: 'friendly', company: 'Acme', name: 'Ada' } });
    assert.deepEqual(data, {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are a friendly assistant for Acme.' },
        { role: 'user', content: 'Hello, I am Ada.', name: 'customer' },
      ],
      temperature: 0.2,
      max_tokens: 100,
      stop: ['\n\n'],
    });
  });

  describe('template features', () => {
    const rows: Array<{ name: string; template: string; variables: Record<string, unknown>; expected: string }> = [
      { name: 'section on', template: '{{#vip}}Dear {{name}}{{/vip}}!', variables: { vip: true, name: 'Ada' }, expected: 'Dear Ada!' },
      { name: 'section off', template: '{{#vip}}Dear {{name}}{{/vip}}!', variables: { vip: false }, expected: '!' },
      { name: 'inverted section', template: '{{^vip}}Hi guest{{/vip}}', variables: { vip: false }, expected: 'Hi guest' },
      { name: 'inverted on empty list', template: '{{^items}}none{{/items}}', variables: { items: [] }, expected: 'none' },
      { name: 'list section', template: '{{#items}}- {{title}}\n{{/items}}', variables: { items: [{ title: 'a' }, { title: 'b' }] }, expected: '- a\n- b\n' },
      { name: 'list of strings with dot', template: '{{#tags}}[{{.}}]{{/tags}}', variables: { tags: ['x', 'y'] }, expected: '[x][y]' },
      { name: 'outer variable inside a list', template: '{{#items}}{{title}} by {{author}};{{/items}}', variables: { items: [{ title: 'a' }], author: 'me' }, expected: 'a by me;' },
      { name: 'object section', template: '{{#user}}{{first}} {{last}}{{/user}}', variables: { user: { first: 'Ada', last: 'L' } }, expected: 'Ada L' },
      { name: 'dotted name', template: '{{user.first}}', variables: { user: { first: 'Ada' } }, expected: 'Ada' },
      { name: 'numbers and booleans', template: '{{n}} {{b}}', variables: { n: 3, b: false }, expected: '3 false' },
      { name: 'null prints nothing', template: '[{{x}}]', variables: { x: null }, expected: '[]' },
      { name: 'objects print as JSON', template: '{{x}} {{{x}}}', variables: { x: { a: [1] } }, expected: '{"a":[1]} {"a":[1]}' },
      { name: 'comments vanish', template: 'a{{! note }}b', variables: {}, expected: 'ab' },
    ];
    for (const row of rows) {
      it(row.name, () => assert.equal(contentOf(user(row.template), row.variables), row.expected));
    }
  });

  it('does not HTML-escape values', () => {
    const text = `<b>"Tom" & 'Jerry'</b> a/b \`c\` =`;
    assert.equal(contentOf(user('{{x}}|{{{x}}}|{{&x}}'), { x: text }), `${text}|${text}|${text}`);
  });

  it('allows extra variables the templates do not use', () => {
    assert.equal(contentOf(user('Hi {{name}}'), { name: 'Ada', unused: 1, also: { deep: true } }), 'Hi Ada');
  });

  it('never reads inherited properties such as constructor', () => {
    const error = reject(user('{{constructor}} {{toString}}'), { variables: {} });
    assert.equal(error.message, 'Missing variables: constructor, toString');
    assert.equal(contentOf(user('{{constructor}}'), { constructor: 'C' }), 'C');
  });

  describe('hyperparameters', () => {
    it('root hyperparameters override the prompt defaults, others are kept', () => {
      const data = render(WELCOME, {
        variables: { tone: 't', company: 'c', name: 'n' },
        temperature: 0.9,
        seed: 7,
        response_format: { type: 'json_object' },
      });
      assert.equal(data.temperature, 0.9);
      assert.equal(data.max_tokens, 100);
      assert.equal(data.seed, 7);
      assert.deepEqual(data.response_format, { type: 'json_object' });
    });

    it('stream and stream_options at the root', () => {
      const data = render(user('hi'), { variables: {}, stream: true, stream_options: { include_usage: true } });
      assert.equal(data.stream, true);
      assert.deepEqual(data.stream_options, { include_usage: true });
    });

    it('model at the root overrides the prompt model', () => {
      assert.equal(render(user('hi'), { variables: {}, model: 'gpt-4.1' }).model, 'gpt-4.1');
    });

    it('a prompt without a model renders without one', () => {
      const data = render(PromptEntrySchema.parse({ id: 'x', messages: [{ role: 'user', content: 'hi' }] }), { variables: {} });
      assert.deepEqual(data, { messages: [{ role: 'user', content: 'hi' }] });
    });

    it('every spec parameter is accepted at the root', () => {
      assert.deepEqual([...PROMPT_PARAMETER_KEYS].sort(), [
        'frequency_penalty', 'function_call', 'functions', 'logit_bias', 'logprobs', 'max_tokens', 'n',
        'parallel_tool_calls', 'presence_penalty', 'response_format', 'seed', 'stop', 'stream', 'stream_options',
        'temperature', 'thinking', 'tool_choice', 'tools', 'top_logprobs', 'top_p', 'user',
      ]);
      const body = {
        variables: {},
        frequency_penalty: 0.5, logit_bias: { '50256': -100 }, logprobs: true, top_logprobs: 2, max_tokens: 10, n: 1,
        presence_penalty: 0, response_format: { type: 'text' }, seed: 1, stop: 'END', stream: false,
        thinking: { type: 'enabled', budget_tokens: 1024 }, temperature: 1, top_p: 0.5,
        tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: {}, strict: true } }],
        tool_choice: 'auto', parallel_tool_calls: false, user: 'u', function_call: { name: 'g' },
        functions: [{ name: 'g', parameters: { type: 'object' } }],
      };
      const { variables: _variables, ...expected } = body;
      assert.deepEqual(render(user('hi'), body), { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...expected });
    });
  });

  describe('rejects with a 400 naming the field', () => {
    const rows: Array<{ name: string; body: unknown; param: string | null; message: RegExp }> = [
      { name: 'nested hyperparameters key', body: { variables: {}, hyperparameters: { temperature: 1 } }, param: 'hyperparameters', message: /at the root of the body/ },
      { name: 'variables missing', body: { temperature: 1 }, param: 'variables', message: /"variables" is required.*this prompt uses: name/ },
      { name: 'variables an array', body: { variables: ['Ada'] }, param: 'variables', message: /must be an object.*not an array/ },
      { name: 'variables a string', body: { variables: 'Ada' }, param: 'variables', message: /not a string/ },
      { name: 'variables null', body: { variables: null }, param: 'variables', message: /not null/ },
      { name: 'body not an object', body: [], param: null, message: /JSON object/ },
      { name: 'a typo gets a suggestion', body: { variables: {}, temprature: 1 }, param: 'temprature', message: /Unknown parameter "temprature" \(did you mean "temperature"\?\)/ },
      { name: 'unknown keys are all named', body: { variables: {}, foo: 1, bar: 2 }, param: 'foo', message: /Unknown parameters "foo", "bar"\. .*temperature/ },
      { name: 'messages cannot be sent', body: { variables: {}, messages: [] }, param: 'messages', message: /cannot set "messages"/ },
      { name: 'temperature out of range', body: { variables: {}, temperature: 3 }, param: 'temperature', message: /^temperature: must be at most 2$/ },
      { name: 'stop with five sequences', body: { variables: {}, stop: ['a', 'b', 'c', 'd', 'e'] }, param: 'stop', message: /^stop: / },
      { name: 'stream not a boolean', body: { variables: {}, stream: 'yes' }, param: 'stream', message: /^stream: / },
      { name: 'model not a string', body: { variables: {}, model: 5 }, param: 'model', message: /^model: / },
    ];
    for (const row of rows) {
      it(row.name, () => {
        const error = reject(user('Hi {{name}}'), row.body);
        assert.equal(error.param, row.param);
        assert.match(error.message, row.message);
      });
    }
  });

  describe('missing variables', () => {
    const rows: Array<{ name: string; template: string; variables: Record<string, unknown>; missing: string }> = [
      { name: 'lists all of them in order', template: 'You are {{tone}}. Hi {{name}}, {{tone}}', variables: {}, missing: 'tone, name' },
      { name: 'inside a section that is on', template: '{{#vip}}Dear {{name}}{{/vip}}', variables: { vip: true }, missing: 'name' },
      { name: 'a missing section and its contents', template: '{{#vip}}Dear {{name}}{{/vip}}{{^x}}{{y}}{{/x}}', variables: {}, missing: 'vip, name, x, y' },
      { name: 'a field missing from one list item', template: '{{#items}}{{title}}{{/items}}', variables: { items: [{ title: 'a' }, {}] }, missing: 'title' },
      { name: 'a dotted path that stops short', template: '{{user.name}}', variables: { user: {} }, missing: 'user.name' },
      { name: 'used only in an inverted section', template: '{{^done}}todo: {{task}}{{/done}}', variables: { done: false }, missing: 'task' },
    ];
    for (const row of rows) {
      it(row.name, () => {
        const error = reject(user(row.template), { variables: row.variables });
        assert.equal(error.message, `Missing variables: ${row.missing}`);
        assert.equal(error.param, 'variables');
      });
    }

    it('collects from every message', () => {
      const error = reject(WELCOME, { variables: { company: 'Acme' } });
      assert.equal(error.message, 'Missing variables: tone, name');
    });

    it('names inside a section that is off are not needed', () => {
      for (const off of [false, null, '', 0, []]) {
        assert.equal(contentOf(user('a{{#on}}{{x}}{{/on}}b'), { on: off }), 'ab', JSON.stringify(off));
      }
      assert.equal(contentOf(user('a{{^on}}{{x}}{{/on}}b'), { on: true }), 'ab');
    });
  });

  it('promptVariablesOf lists every name the templates use, once, in order', () => {
    const entry = prompt({
      messages: [
        { role: 'system', content: '{{tone}} {{#vip}}{{name}}{{/vip}}{{^vip}}{{tone}}{{/vip}}' },
        { role: 'user', content: '{{user.name}} {{#tags}}{{.}}{{/tags}} {{{raw}}}' },
      ],
    });
    assert.deepEqual(promptVariablesOf(entry), ['tone', 'vip', 'name', 'user', 'tags', 'raw']);
  });

  it('renders the same prompt object repeatedly from its cached templates', () => {
    const entry = user('Hi {{name}}');
    for (const name of ['a', 'b', 'c']) assert.equal(contentOf(entry, { name }), `Hi ${name}`);
  });
});

describe('PromptEntrySchema', () => {
  const rows: Array<{ name: string; entry: Record<string, unknown>; problem: RegExp }> = [
    { name: 'an unclosed section', entry: { messages: [{ role: 'user', content: '{{#a}}x' }] }, problem: /messages,0,content.*Unclosed section/s },
    { name: 'a partial', entry: { messages: [{ role: 'user', content: '{{> footer}}' }] }, problem: /partials/ },
    { name: 'no messages', entry: { messages: [] }, problem: /messages/ },
    { name: 'an unknown role', entry: { messages: [{ role: 'sytem', content: 'x' }] }, problem: /role/ },
    { name: 'a parameter out of range', entry: { messages: [{ role: 'user', content: 'x' }], parameters: { top_p: 2 } }, problem: /top_p/ },
    { name: 'an unknown parameter', entry: { messages: [{ role: 'user', content: 'x' }], parameters: { hyperparameters: {} } }, problem: /hyperparameters/ },
    { name: 'an unknown key', entry: { messages: [{ role: 'user', content: 'x' }], temperature: 1 }, problem: /temperature/ },
  ];
  for (const row of rows) {
    it(`rejects ${row.name}`, () => {
      const result = PromptEntrySchema.safeParse({ id: 'p', ...row.entry });
      assert.equal(result.success, false);
      assert.match(JSON.stringify(result.error?.issues.map((issue) => [issue.path.join(','), issue.message])), row.problem);
    });
  }

  it('defaults parameters to an empty object', () => {
    assert.deepEqual(PromptEntrySchema.parse({ id: 'p', messages: [{ role: 'user', content: 'x' }] }).parameters, {});
  });
});
