import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../../../proxy/errors.ts';
import { validateRequestBody } from '../../../proxy/openai/body-validation.ts';
import type { InferenceEndpoint } from '../../../proxy/openai/inference-endpoint.ts';
import { formatIssuePath } from '../../../proxy/openai/zod-issues.ts';
import { ENDPOINT_PATHS, LIMIT_VIOLATIONS, MINIMAL_BODIES, VALID_BODIES } from '../../fixtures/limits-violations.ts';

const ENDPOINTS = Object.keys(ENDPOINT_PATHS) as InferenceEndpoint[];

// The rows travel as JSON in the integration tests; validate what a server would see.
function overTheWire(body: unknown): unknown {
  return JSON.parse(JSON.stringify(body));
}

function expectInvalid(endpoint: InferenceEndpoint, body: unknown): GatewayError {
  const error = validateRequestBody(endpoint, body);
  if (!(error instanceof GatewayError)) assert.fail(`expected ${endpoint} to reject ${JSON.stringify(body)}`);
  assert.equal(error.code, 'AIGW_ERR_INVALID_BODY');
  assert.equal(error.status, 400);
  assert.equal(error.type, 'invalid_request_error');
  return error;
}

function messageFor(endpoint: InferenceEndpoint, changes: Record<string, unknown>): string {
  return expectInvalid(endpoint, { ...MINIMAL_BODIES[endpoint], ...changes }).message;
}

describe('validateRequestBody', () => {
  describe('accepts valid bodies', () => {
    for (const row of VALID_BODIES) {
      it(row.name, () => {
        assert.equal(validateRequestBody(row.endpoint, overTheWire(row.body)), undefined);
      });
    }
  });

  describe('rejects each limit violation with its param', () => {
    for (const row of LIMIT_VIOLATIONS) {
      it(row.name, () => {
        const error = expectInvalid(row.endpoint, overTheWire(row.body));
        assert.equal(error.param, row.param, error.message);
        assert.ok(error.message.startsWith(`${row.param}: `), error.message);
        // Readable prose, never zod's JSON dump.
        assert.doesNotMatch(error.message, /[{}"]|Invalid input/);
      });
    }
  });

  it('every violation row breaks exactly one rule', () => {
    for (const row of LIMIT_VIOLATIONS) {
      const error = expectInvalid(row.endpoint, overTheWire(row.body));
      assert.ok(!error.message.includes('; '), `${row.name}: ${error.message}`);
    }
  });

  it('fixture paths match their endpoints', () => {
    for (const row of [...VALID_BODIES, ...LIMIT_VIOLATIONS]) {
      assert.equal(row.path, ENDPOINT_PATHS[row.endpoint], row.name);
    }
  });

  it('rejects a body that is not a JSON object, with a null param', () => {
    for (const endpoint of ENDPOINTS) {
      for (const body of [null, undefined, [], [{ model: 'm' }], 'model', 42, true]) {
        const error = expectInvalid(endpoint, body);
        assert.equal(error.message, 'request body must be a JSON object');
        assert.equal(error.param, null);
      }
    }
  });

  it('states what is wrong in plain words', () => {
    assert.equal(messageFor('completions', { temperature: 2.5 }), 'temperature: must be at most 2');
    assert.equal(messageFor('completions', { n: 0 }), 'n: must be at least 1');
    assert.equal(messageFor('completions', { stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop: at most 4 sequences');
    assert.equal(messageFor('completions', { best_of: 2, n: 2 }), 'best_of: must be greater than n');
    assert.equal(messageFor('completions', { stream_options: {} }), 'stream_options: only allowed when stream is true');
    assert.equal(messageFor('completions', { logprobs: 2.5 }), 'logprobs: must be an integer');
    assert.equal(messageFor('completions', { echo: 'yes' }), 'echo: must be a boolean');
    assert.equal(messageFor('chat.completions', { messages: [{}] }), 'messages[0].role: Required');
    assert.equal(messageFor('chat.completions', { messages: [] }), 'messages: must not be empty');
    assert.equal(
      messageFor('chat.completions', { messages: [{ role: 'robot' }] }),
      'messages[0].role: must be one of system, developer, user, assistant, tool, function',
    );
    assert.equal(messageFor('chat.completions', { logit_bias: { '50256': 101 } }), 'logit_bias.50256: must be at most 100');
    assert.equal(
      messageFor('completions', { logit_bias: { hello: 1 } }),
      'logit_bias.hello: key must be a token id (a string of digits)',
    );
    assert.equal(messageFor('responses', { metadata: { ['k'.repeat(65)]: 'v' } }), `metadata.${'k'.repeat(65)}: key must be at most 64 characters`);
    assert.equal(messageFor('embeddings', { encoding_format: 'int8' }), 'encoding_format: must be one of float, base64');
    assert.equal(messageFor('responses', { metadata: { k: 'x'.repeat(513) } }), 'metadata.k: must be at most 512 characters');
    assert.match(
      messageFor('responses', { include: ['file_search_call.results', 'nope'] }),
      /^include\[1\]: must be one of file_search_call\.results, web_search_call\.results, .*message\.output_text\.logprobs$/,
    );
    assert.equal(expectInvalid('completions', { model: 'm' }).message, 'prompt: Required');
  });

  it('lists every issue and reports the first one as param', () => {
    const error = expectInvalid('chat.completions', {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }, { content: 'no role' }],
      temperature: 3,
      n: 0,
    });
    assert.equal(error.message, 'messages[1].role: Required; temperature: must be at most 2; n: must be at least 1');
    assert.equal(error.param, 'messages[1].role');
  });

  it('reports a missing model and input together', () => {
    const error = expectInvalid('responses', {});
    assert.equal(error.message, 'model: Required; input: Required');
    assert.equal(error.param, 'model');
  });

  it('accepts any model id on responses', () => {
    for (const model of ['o1-pro', 'computer-use-preview-2025-03-11', 'gpt-4.1', 'claude-sonnet-4', 'my-org/fine-tune:v2']) {
      assert.equal(validateRequestBody('responses', { model, input: 'hi' }), undefined);
    }
  });

  it('does not modify the body', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], extra: { nested: [1] } };
    const copy = structuredClone(body);
    assert.equal(validateRequestBody('chat.completions', body), undefined);
    assert.deepEqual(body, copy);
  });

  it('never throws, even for a hostile body', () => {
    const hostile = {
      model: 'm',
      get messages(): unknown {
        throw new Error('boom');
      },
    };
    const error = expectInvalid('chat.completions', hostile);
    assert.equal(error.param, null);
    assert.ok(error.cause instanceof Error);
    const nullPrototype = Object.assign(Object.create(null) as Record<string, unknown>, MINIMAL_BODIES.completions);
    assert.equal(validateRequestBody('completions', nullPrototype), undefined);
    assert.equal(validateRequestBody('unknown' as InferenceEndpoint, { model: 'm' }), undefined);
  });
});

describe('formatIssuePath', () => {
  it('joins keys with dots and indexes with brackets', () => {
    assert.equal(formatIssuePath(['messages', 0, 'role']), 'messages[0].role');
    assert.equal(formatIssuePath(['logit_bias', '50256']), 'logit_bias.50256');
    assert.equal(formatIssuePath(['input', 1, 0]), 'input[1][0]');
    assert.equal(formatIssuePath([]), '');
  });
});
