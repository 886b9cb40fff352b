import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileUserRegex, MAX_REGEX_TEXT_LENGTH } from '../../../proxy/guardrails/user-regex.ts';
import { RegexTextTooLongError, CheckParameterError } from '../../../proxy/errors.ts';

function rejection(source: string, flags = ''): string {
  try {
    compileUserRegex(source, flags, ['rule']);
  } catch (error) {
    assert.ok(error instanceof CheckParameterError);
    assert.deepEqual(error.path, ['rule']);
    return error.message;
  }
  return 'accepted';
}

describe('user regexes', () => {
  const rejected: Array<[string, RegExp]> = [
    ['(a+)+$', /may backtrack catastrophically/],
    ['(x*)*', /may backtrack catastrophically/],
    ['(?:\\s*\\w+)*;', /may backtrack catastrophically/],
    ['(\\w)\\1', /lookarounds or backreferences/],
    ['a(?=b)', /lookarounds or backreferences/],
    ['(?<!a)b', /lookarounds or backreferences/],
    ['[', /is not a valid regular expression/],
  ];
  for (const [source, message] of rejected) {
    it(`rejects ${source}`, () => assert.match(rejection(source), message));
  }

  it('runs the shapes a star-height checker misses on the linear-time engine, never V8\'s', () => {
    // Both pass safe-regex2 and backtrack exponentially / polynomially on V8's engine, so
    // matching must not touch a native RegExp at all (RE2JS is linear by construction).
    const overlapping = compileUserRegex('(a|a)*$', '', ['rule']);
    const adjacent = compileUserRegex('a*a*a*a*a*b', '', ['rule']);
    const text = `${'a'.repeat(100_000)}!`;
    const { exec, test } = RegExp.prototype;
    const refuse = (): never => assert.fail('a user pattern ran on the native RegExp engine');
    RegExp.prototype.exec = refuse;
    RegExp.prototype.test = refuse;
    try {
      assert.equal(overlapping.test(text), true);
      assert.equal(adjacent.test(text), false);
    } finally {
      RegExp.prototype.exec = exec;
      RegExp.prototype.test = test;
    }
  });

  it('keeps JavaScript flags and syntax (named groups, classes, unicode)', () => {
    assert.equal(compileUserRegex('^hello$', 'im', ['rule']).test('x\nHELLO\ny'), true);
    assert.equal(compileUserRegex('a.b', 's', ['rule']).test('a\nb'), true);
    assert.equal(compileUserRegex('\\p{Lu}{2}', 'u', ['rule']).test('éÉÀ'), true);
    assert.equal(compileUserRegex('a/b', 'g', ['rule']).test('a/b'), true);
  });

  it('replaces like String.prototype.replace with a global regex', () => {
    const regex = compileUserRegex('(?<area>\\d{3})-(\\d{4})', '', ['rule']);
    assert.equal(regex.replaceAll('555-1234 and 555-9876', '$<area>-XXXX [$&] $2 $$'), '555-XXXX [555-1234] 1234 $ and 555-XXXX [555-9876] 9876 $');
  });

  it('refuses texts over the cap', () => {
    const regex = compileUserRegex('x', '', ['rule']);
    assert.equal(regex.test('y'.repeat(MAX_REGEX_TEXT_LENGTH)), false);
    assert.throws(() => regex.test('y'.repeat(MAX_REGEX_TEXT_LENGTH + 1)), RegexTextTooLongError);
  });
});
