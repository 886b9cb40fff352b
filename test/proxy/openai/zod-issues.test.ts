import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { describeZodIssue, formatIssue, formatIssuePath, fromZodIssue } from '../../../proxy/openai/zod-issues.ts';

// One wording and one path format for every validator: the error map (bodies, prompts) and
// the after-the-fact rewrite (routing configs, guardrail parameters) must say the same thing.

const schema = z.strictObject({
  name: z.string().max(3),
  tags: z.array(z.string()).min(2),
  mode: z.enum(['a', 'b']),
  limits: z.record(z.string(), z.int().min(1)),
});

function viaMap(input: unknown): string[] {
  const parsed = schema.safeParse(input, { error: describeZodIssue });
  return parsed.success ? [] : parsed.error.issues.map((issue) => formatIssue(issue));
}

function viaRewrite(input: unknown): string[] {
  const parsed = schema.safeParse(input, { reportInput: true });
  return parsed.success ? [] : parsed.error.issues.flatMap((issue) => fromZodIssue(issue)).map((issue) => formatIssue(issue));
}

describe('zod issues in the house style', () => {
  it('the error map and the rewrite word the generic issues alike', () => {
    const input = { name: 'long', tags: ['x'], mode: 'c', limits: { 'a.b': 0 } };
    const expected = ['name: must be at most 3 characters', 'tags: must have at least 2 items', 'mode: must be one of a, b', 'limits["a.b"]: must be at least 1'];
    assert.deepEqual(viaMap(input), expected);
    assert.deepEqual(viaRewrite(input), expected);
  });

  it('a missing key is Required; a wrong type names the type', () => {
    const expected = ['name: must be a string', 'tags: Required', 'mode: Required', 'limits: Required'];
    assert.deepEqual(viaMap({ name: 1 }), expected);
    assert.deepEqual(viaRewrite({ name: 1 }), expected);
  });

  it('the rewrite reports each unknown key, and a root issue names the root when asked', () => {
    const issues = schema.safeParse({ name: 'a', tags: ['a', 'b'], mode: 'a', limits: {}, extra: 1 }).error?.issues ?? [];
    assert.deepEqual(issues.flatMap((issue) => fromZodIssue(issue, ['config'])), [{ path: ['config', 'extra'], message: 'unknown key' }]);
    assert.equal(formatIssue({ path: [], message: 'must be an object' }, 'config'), 'config: must be an object');
    assert.equal(formatIssue({ path: [], message: 'must be an object' }), 'must be an object');
  });

  it('paths: indexes in brackets, plain names and digit keys dotted, other keys quoted', () => {
    assert.equal(formatIssuePath(['messages', 0, 'role']), 'messages[0].role');
    assert.equal(formatIssuePath(['logit_bias', '50256']), 'logit_bias.50256');
    assert.equal(formatIssuePath(['input_guardrails', 0, 'default.regexMatch', 'rule']), 'input_guardrails[0]["default.regexMatch"].rule');
    assert.equal(formatIssuePath([]), '');
  });
});
