import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { findDuplicateKey } from '../../../proxy/openai/json-duplicate-keys.ts';
import { formatIssuePath } from '../../../proxy/openai/zod-issues.ts';

// findDuplicateKey against a plain recursive reference (keys compared by their UTF-8 bytes
// once decoded, as the scanner does), on generated bodies: nesting, escapes, strings holding
// brackets and quotes, objects past the scanner's 16-key list, duplicates anywhere.

function reference(text: string): string | undefined {
  let at = 0;
  const path: Array<string | number> = [];
  const skipSpace = (): void => {
    while (/\s/.test(text[at] ?? '')) at++;
  };
  const string = (): string => {
    const start = at;
    at++;
    while (text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (): boolean => {
    skipSpace();
    const char = text[at];
    if (char === '{') {
      at++;
      const seen = new Set<string>();
      skipSpace();
      if (text[at] === '}') {
        at++;
        return false;
      }
      for (;;) {
        skipSpace();
        const key = string();
        const bytes = Buffer.from(key, 'utf8').toString('hex');
        path.push(key);
        if (seen.has(bytes)) return true;
        seen.add(bytes);
        skipSpace();
        at++; // :
        if (value()) return true;
        path.pop();
        skipSpace();
        if (text[at++] === '}') return false;
      }
    }
    if (char === '[') {
      at++;
      skipSpace();
      if (text[at] === ']') {
        at++;
        return false;
      }
      for (let index = 0; ; index++) {
        path.push(index);
        if (value()) return true;
        path.pop();
        skipSpace();
        if (text[at++] === ']') return false;
      }
    }
    if (char === '"') {
      string();
      return false;
    }
    while (at < text.length && !/[,\]}\s]/.test(text[at] ?? '')) at++;
    return false;
  };
  return value() ? formatIssuePath(path) : undefined;
}

function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const KEYS = ['a', 'b', 'model', 'role', '\\u0061', 'm\\u006fdel', 'x\\"y', 'x\\\\', 'é', '\\u00e9', 'k{', 'k]', ''];
const STRINGS = ['"plain"', '"with \\"quotes\\" and {braces} [x], commas"', '"\\\\"', `"${'long text '.repeat(8)}"`, '"\\u0022"'];

function body(random: () => number, depth: number): string {
  const roll = random();
  if (depth > 3 || roll < 0.3) return ['1', 'true', 'null', '-2.5e3', ...STRINGS][Math.floor(random() * (4 + STRINGS.length))] as string;
  if (roll < 0.5) {
    const items = Math.floor(random() * 4);
    return `[${Array.from({ length: items }, () => body(random, depth + 1)).join(', ')}]`;
  }
  const many = random() < 0.15;
  const count = many ? 17 + Math.floor(random() * 10) : Math.floor(random() * 5);
  const duplicates = random() < 0.3;
  const members = Array.from({ length: count }, (_, index) => {
    const key = many && !duplicates ? `k${index}` : (KEYS[Math.floor(random() * KEYS.length)] as string);
    return `"${key}" : ${body(random, depth + 1)}`;
  });
  return `{${members.join(',')}}`;
}

describe('findDuplicateKey', () => {
  it('agrees with a recursive reference on 2,000 generated bodies', () => {
    const random = generator(7);
    let found = 0;
    for (let index = 0; index < 2_000; index++) {
      const text = body(random, 0);
      JSON.parse(text); // the scanner is only given valid JSON
      const expected = reference(text);
      if (expected !== undefined) found++;
      assert.equal(findDuplicateKey(Buffer.from(text)), expected, text.length > 300 ? `${text.slice(0, 300)}…` : text);
    }
    assert.ok(found > 200 && found < 1_800, `duplicates in ${found} bodies`);
  });

  it('keeps nothing from one body to the next, and survives deep nesting', () => {
    const deep = `${'['.repeat(5_000)}{"a":1,"a":2}${']'.repeat(5_000)}`;
    assert.equal(findDuplicateKey(Buffer.from(deep)), formatIssuePath([...Array.from({ length: 5_000 }, () => 0), 'a']));
    const wide = `{${Array.from({ length: 3_000 }, (_, index) => `"k${index}":1`).join(',')}}`;
    assert.equal(findDuplicateKey(Buffer.from(wide)), undefined);
    assert.equal(findDuplicateKey(Buffer.from('{"a":{"b":1},"b":2}')), undefined);
    assert.equal(findDuplicateKey(Buffer.from('{"\\u0061":1,"a":2}')), 'a');
    assert.equal(findDuplicateKey(Buffer.from('{"a":1}')), undefined);
  });
});
