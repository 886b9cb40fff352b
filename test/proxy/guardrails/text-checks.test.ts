import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { containsWord, countCharacters, countSentences, countWords } from '../../../proxy/guardrails/text-checks.ts';
import { describeCheckTable } from './check-table.ts';

describeCheckTable('default.regexMatch', {
  pass: [
    [{ rule: 'secret' }, 'the secret plan'],
    [{ rule: '\\bSECRET\\b', flags: 'i' }, 'a Secret.'],
    [{ rule: '^b', flags: 'm' }, 'a\nb'],
    [{ rule: '(?<word>\\d{3})-\\d{4}' }, 'call 555-1234'],
  ],
  fail: [
    [{ rule: 'secret' }, 'nothing to see'],
    [{ rule: 'SECRET' }, 'secret (case matters without i)'],
    [{ rule: 'a.b' }, 'a\nb'],
  ],
  bad: [
    [{}, '.rule: Required'],
    [{ rule: '' }, '.rule: must not be empty'],
    [{ rule: '(' }, '.rule: is not a valid regular expression'],
    [{ rule: '(a+)+$' }, '.rule: may backtrack catastrophically'],
    [{ rule: '(\\w)\\1' }, '.rule: uses syntax the linear-time regex engine does not support'],
    [{ rule: 'x', flags: 'gx' }, '.flags: must be made of the flags'],
    [{ rule: 'x', extra: 1 }, '.extra: unknown key'],
  ],
});

describeCheckTable('default.sentenceCount', {
  pass: [
    [{ minSentences: 2 }, 'One. Two! Three?'],
    [{ maxSentences: 1 }, 'Just one sentence'],
    [{ minSentences: 1, maxSentences: 3 }, 'One. Two.'],
  ],
  fail: [
    [{ minSentences: 3 }, 'One. Two.'],
    [{ maxSentences: 1 }, 'One. Two.'],
    [{ minSentences: 1 }, '   '],
  ],
  bad: [
    [{}, ': needs minSentences, maxSentences or both'],
    [{ minSentences: 3, maxSentences: 2 }, '.minSentences: must not be greater than maxSentences'],
    [{ minSentences: -1 }, '.minSentences: must be at least 0'],
    [{ minSentences: 1.5 }, '.minSentences: must be an integer'],
  ],
});

describeCheckTable('default.wordCount', {
  pass: [
    [{ minWords: 3, maxWords: 3 }, 'one, two... three!'],
    [{ maxWords: 10 }, ''],
    [{ minWords: 2 }, 'naïve café'],
  ],
  fail: [
    [{ minWords: 4 }, 'one two three'],
    [{ maxWords: 2 }, 'one two three'],
  ],
  bad: [
    [{}, ': needs minWords, maxWords or both'],
    [{ minWords: 'two' }, '.minWords: must be a number'],
    [{ minWords: 5, maxWords: 1 }, '.minWords: must not be greater than maxWords'],
  ],
});

describeCheckTable('default.characterCount', {
  pass: [
    [{ maxCharacters: 5 }, 'héllo'],
    [{ minCharacters: 2, maxCharacters: 2 }, '👍👍'],
  ],
  fail: [
    [{ maxCharacters: 4 }, 'hello'],
    [{ minCharacters: 10 }, 'short'],
  ],
  bad: [
    [{}, ': needs minCharacters, maxCharacters or both'],
    [{ maxCharacters: null }, '.maxCharacters: must be a number'],
  ],
});

describeCheckTable('default.contains', {
  pass: [
    [{ words: ['refund'] }, 'I want a REFUND now'],
    [{ words: ['refund', 'cancel'], operator: 'all' }, 'cancel it and refund me'],
    [{ words: ['refund', 'cancel'], operator: 'none' }, 'hello there'],
    [{ words: ['credit card'] }, 'my Credit  card? no: my credit card'],
  ],
  fail: [
    [{ words: ['refund', 'cancel'], operator: 'all' }, 'refund only'],
    [{ words: ['refund'], operator: 'none' }, 'refund'],
    [{ words: ['class'] }, 'a classic example'],
  ],
  bad: [
    [{}, '.words: Required'],
    [{ words: [] }, '.words: must not be empty'],
    [{ words: ['  '] }, '.words[0]: must not be empty'],
    [{ words: ['a'], operator: 'some' }, '.operator: must be one of any, all, none'],
  ],
});

describeCheckTable('default.allUppercase', {
  pass: [[{}, 'HELLO WORLD 42!'], [{}, 'ÉTÉ']],
  fail: [[{}, 'Hello'], [{}, 'été']],
  bad: [[{ strict: true }, '.strict: unknown key']],
});

describeCheckTable('default.allLowercase', {
  pass: [[{}, 'hello world 42!'], [{}, 'été']],
  fail: [[{}, 'Hello']],
  bad: [[{ strict: true }, '.strict: unknown key']],
});

describeCheckTable('default.endsWith', {
  pass: [[{ suffix: 'Thanks!' }, 'Hello. Thanks!  \n'], [{ suffix: '.' }, 'A sentence.']],
  fail: [[{ suffix: 'Thanks!' }, 'Thanks! Bye'], [{ suffix: '.' }, '']],
  bad: [[{}, '.suffix: Required'], [{ suffix: '' }, '.suffix: must not be empty'], [{ suffix: 3 }, '.suffix: must be a string']],
});

describeCheckTable('default.notNull', {
  pass: [[{}, 'x'], [{}, { text: 'a prompt', endpoint: 'completions' }]],
  fail: [[{}, ''], [{}, ' \n\t ']],
  bad: [[{ allowEmpty: true }, '.allowEmpty: unknown key']],
});

describe('text measures', () => {
  it('counts sentences by Unicode segmentation and ignores blank ones', () => {
    assert.equal(countSentences('One. Two! Three? '), 3);
    assert.equal(countSentences(''), 0);
    assert.equal(countSentences('...'), 0);
  });

  it('counts words in any script and not punctuation', () => {
    assert.equal(countWords('Hello, world — 42 times.'), 4);
    assert.equal(countWords('¿Qué tal?'), 2);
  });

  it('counts code points, not UTF-16 units', () => {
    assert.equal(countCharacters('a👍'), 2);
  });

  it('matches words and phrases only at word boundaries', () => {
    assert.equal(containsWord('a classic example', 'class'), false);
    assert.equal(containsWord('first class.', 'class'), true);
    assert.equal(containsWord('email: a@b.c', '@b'), true);
  });
});
