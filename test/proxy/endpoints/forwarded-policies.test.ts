// The pure pieces of policies on forwarded routes: reading `usage` from a JSON answer's tail,
// and the token estimate a reservation takes (hostile values fall back, never NaN).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { usageBlockOf } from '../../../proxy/endpoints/forwarded-policies.ts';
import { DEFAULT_RESERVED_OUTPUT_TOKENS, tokenEstimate } from '../../../proxy/endpoints/policy-admission.ts';

describe('usageBlockOf', () => {
  test('reads the last usage object and the model of an answer', () => {
    const text = JSON.stringify({ model: 'gpt-image-1', data: [{ b64_json: 'x' }], usage: { input_tokens: 10, output_tokens: 20, total_tokens: 30 } });
    assert.deepEqual(usageBlockOf(text), { usage: { input_tokens: 10, output_tokens: 20, total_tokens: 30 }, model: 'gpt-image-1' });
  });

  test('braces and quotes inside strings do not end the object early', () => {
    const text = '{"usage":{"note":"a } \\" {","total_tokens":7}}';
    assert.deepEqual(usageBlockOf(text)?.['usage'], { note: 'a } " {', total_tokens: 7 });
  });

  test('no usage, usage null, a cut object or "usage" as a plain word: nothing', () => {
    assert.equal(usageBlockOf('{"data":[]}'), undefined);
    assert.equal(usageBlockOf('{"usage":null}'), undefined);
    assert.equal(usageBlockOf('{"usage":{"total_tokens":'), undefined);
    assert.equal(usageBlockOf('{"text":"the \\"usage\\" of words {x}"}'), undefined);
  });
});

describe('tokenEstimate', () => {
  test('prompt bytes / 4 plus max_tokens; the default when unset', () => {
    assert.equal(tokenEstimate({ max_tokens: 5 }, 80), 25);
    assert.equal(tokenEstimate({ max_completion_tokens: 7 }, 4), 8);
    assert.equal(tokenEstimate({}, 4), 1 + DEFAULT_RESERVED_OUTPUT_TOKENS);
    assert.equal(tokenEstimate(undefined, 0, false), 1);
  });

  test('hostile output caps fall back to the default', () => {
    for (const value of [-1, 1.5, Number.NaN, 1e300, '5', null]) {
      assert.equal(tokenEstimate({ max_tokens: value }, 0), DEFAULT_RESERVED_OUTPUT_TOKENS, String(value));
    }
  });
});
