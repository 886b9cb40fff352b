import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { detectCodeFormats } from '../../../proxy/guardrails/code-detection.ts';
import { findJsonValues } from '../../../proxy/guardrails/json-in-text.ts';
import { findUrls, isValidUrl } from '../../../proxy/guardrails/structure-checks.ts';
import { describeCheckTable, runOneCheck } from './check-table.ts';

const personSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, email: { type: 'string', format: 'email' }, code: { type: 'string', pattern: '^[A-Z]{3}$' } },
  required: ['name'],
};

describeCheckTable('default.jsonSchema', {
  pass: [
    [{ schema: personSchema }, '{"name": "Ann", "email": "ann@example.com"}'],
    [{ schema: personSchema }, 'Sure:\n```json\n{"name": "Ann", "code": "ABC"}\n```\nanything else?'],
    [{ schema: personSchema }, 'first {"nope": 1} then {"name": "Bo"}'],
    [{ schema: { type: 'array', items: { type: 'integer' } } }, '[1, 2, 3]'],
  ],
  fail: [
    [{ schema: personSchema }, '{"email": "ann@example.com"}'],
    [{ schema: personSchema }, '{"name": "Ann", "email": "not an email"}'],
    [{ schema: personSchema }, '{"name": "Ann", "code": "abc"}'],
    [{ schema: personSchema }, 'no JSON here'],
  ],
  bad: [
    [{}, '.schema: Required'],
    [{ schema: 'object' }, '.schema: must be an object'],
    [{ schema: { type: 'nope' } }, '.schema: is not a valid JSON schema'],
    [{ schema: { type: 'string', pattern: '(a+)+$' } }, '.schema: is not a valid JSON schema (pattern "(a+)+$" may backtrack'],
    [{ schema: { $async: true, type: 'object' } }, '.schema.$async: async schemas are not supported'],
  ],
});

describeCheckTable('default.jsonKeys', {
  pass: [
    [{ keys: ['name'] }, '{"name": "Ann"}'],
    [{ keys: ['name', 'age'], operator: 'all' }, 'result: {"name": "Ann", "age": 3}'],
    [{ keys: ['password'], operator: 'none' }, '{"name": "Ann"}'],
  ],
  fail: [
    [{ keys: ['name', 'age'], operator: 'all' }, '{"name": "Ann"}'],
    [{ keys: ['password'], operator: 'none' }, '{"password": "x"}'],
    [{ keys: ['name'] }, 'not json'],
  ],
  bad: [
    [{}, '.keys: Required'],
    [{ keys: [] }, '.keys: must not be empty'],
    [{ keys: ['a'], operator: 'one' }, '.operator: must be one of any, all, none'],
  ],
});

describeCheckTable('default.validUrls', {
  pass: [
    [{}, 'See https://example.com/docs?q=1 and http://sub.example.org:8080/path.'],
    [{}, 'no links at all'],
    [{}, '(https://en.wikipedia.org/wiki/Foo_(bar)) and http://127.0.0.1:3000 and http://localhost/x'],
    [{ onlyDNS: true }, 'http://localhost:8080/health'],
  ],
  fail: [
    [{}, 'broken: https://exa_mple.com/ and fine: https://example.com'],
    [{}, 'https://nodot/x'],
    [{}, 'https://-bad-.example.com'],
    [{ onlyDNS: true }, 'https://no-such-host.invalid/page'],
  ],
  bad: [
    [{ onlyDNS: 'yes' }, '.onlyDNS: must be a boolean'],
    [{ checkReachability: true }, '.checkReachability: unknown key'],
  ],
});

describeCheckTable('default.containsCode', {
  pass: [
    [{ format: 'SQL' }, 'Run this:\n```sql\nSELECT * FROM users;\n```'],
    [{ format: 'SQL' }, "try SELECT name, email FROM users WHERE 1=1; DROP TABLE users"],
    [{ format: 'Python' }, 'def greet(name):\n    return f"hi {name}"\n'],
    [{ format: 'python' }, '```py\nprint(1)\n```'],
    [{ format: 'JavaScript' }, 'const add = (a, b) => a + b;\nconsole.log(add(1, 2));'],
    [{ format: 'TypeScript' }, 'interface User {\n  name: string;\n}'],
    [{ format: 'Shell' }, '#!/bin/bash\necho hi'],
    [{ format: 'HTML' }, 'Add <script src="x.js"></script> to the page'],
    [{ format: 'JSON' }, '{"a": 1}'],
    [{ format: 'Go' }, '```go\nfunc main() {}\n```'],
  ],
  fail: [
    [{ format: 'SQL' }, 'Please select a book from the shelf.'],
    [{ format: 'Python' }, 'Python is a snake and a language.'],
    [{ format: 'SQL' }, '```python\nprint("SELECT")\n```'],
    [{ format: 'Go' }, 'Go to the store, then come back.'],
  ],
  bad: [
    [{}, '.format: Required'],
    [{ format: 'COBOL' }, '.format: must be one of SQL, Python'],
  ],
});

describe('JSON schemas across configs', () => {
  it('compiles two schemas with the same $id independently', async () => {
    const first = { $id: 'https://example.com/answer', type: 'object', required: ['a'] };
    const second = { $id: 'https://example.com/answer', type: 'object', required: ['b'] };
    assert.equal((await runOneCheck('default.jsonSchema', { schema: first }, '{"a": 1}')).verdict, true);
    assert.equal((await runOneCheck('default.jsonSchema', { schema: second }, '{"a": 1}')).verdict, false);
    assert.equal((await runOneCheck('default.jsonSchema', { schema: first }, '{"b": 1}')).verdict, false);
  });
});

describe('JSON in text', () => {
  it('takes the whole text, else fenced blocks, else balanced spans', () => {
    assert.deepEqual(findJsonValues(' {"a": [1, {"b": "}"}]} '), [{ a: [1, { b: '}' }] }]);
    assert.deepEqual(findJsonValues('x ```json\n[1]\n``` y {"ignored": true}'), [[1]]);
    assert.deepEqual(findJsonValues('a {"x": "[" } b [2] c {broken'), [{ x: '[' }, [2]]);
    assert.deepEqual(findJsonValues('"just a string"'), []);
  });
});

describe('URLs in text', () => {
  it('drops trailing punctuation and unbalanced parentheses', () => {
    assert.deepEqual(findUrls('see (https://a.example/x), then https://b.example/y.'), ['https://a.example/x', 'https://b.example/y']);
  });

  it('judges hosts by DNS-name syntax', () => {
    assert.equal(isValidUrl('https://xn--bcher-kva.example/'), true);
    assert.equal(isValidUrl('https://[::1]:8080/'), true);
    assert.equal(isValidUrl('https://a..b.com'), false);
    assert.equal(isValidUrl('https://example.c0m'), false);
  });
});

describe('code detection', () => {
  it('reports fenced tags and heuristics separately', () => {
    const found = detectCodeFormats('```ts\nconst x = 1\n```\nand DELETE FROM t');
    assert.deepEqual([...found.fenced], ['TypeScript']);
    assert.ok(found.heuristic.has('SQL'));
  });

  it('reports what it found in the check data', async () => {
    const result = await runOneCheck('default.containsCode', { format: 'SQL' }, '```sql\nSELECT 1 FROM t\n```');
    assert.deepEqual(result.data?.['fenced'], ['SQL']);
  });
});
