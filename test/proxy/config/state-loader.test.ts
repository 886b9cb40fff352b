import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { authenticateApiKey } from '../../../proxy/auth/api-key-auth.ts';
import { substituteEnv } from '../../../proxy/config/env-substitution.ts';
import { loadStateFromTexts } from '../../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { GatewayError } from '../../../proxy/errors.ts';

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('env substitution', () => {
  test('replaces ${NAME}, applies ${NAME:-default}, keeps $${literal}, reports unset names with their path', () => {
    const result = substituteEnv(
      { a: '${X}', b: ['pre-${X}-post', '${Y:-fallback}', '$${X}'], c: { d: '${MISSING}' }, n: 3 },
      { X: 'ex' },
    );
    assert.deepEqual(result.value, { a: 'ex', b: ['pre-ex-post', 'fallback', '${X}'], c: { d: '' }, n: 3 });
    assert.deepEqual(result.issues, ['c.d: environment variable MISSING is not set']);
  });

  test('a value with YAML syntax cannot change the document structure', () => {
    const text = 'apiKeys:\n  - id: a\n    key: ${K}\n';
    const loaded = loadStateFromTexts({ state: text }, { K: 'abcdefgh-0123456789abcdefghijklmnop\n  - id: injected' }, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok);
    assert.equal(loaded.state.apiKeysByDigest.size, 1);
  });
});

describe('state loading', () => {
  test('an empty, comments-only or null document is never a valid state', () => {
    for (const text of ['', '   \n', '# only a comment\n', '~\n', 'null\n']) {
      const loaded = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
      assert.equal(loaded.ok, false, JSON.stringify(text));
      if (!loaded.ok) assert.match(loaded.errors.join('\n'), /state: the document is empty/);
    }
    const credentials = loadStateFromTexts({ state: 'apiKeys: []', credentials: '' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(credentials.ok, false);
  });

  test('plain keys and sha256 hashes are both stored as digests', () => {
    const text = `apiKeys:\n  - { id: a, key: plain-key-1-0123456789abcdefghijklmn }\n  - { id: b, keyHash: "sha256:${sha('hashed-key-2').toUpperCase()}" }\n`;
    const loaded = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok);
    assert.equal(authenticateApiKey(loaded.state, 'plain-key-1-0123456789abcdefghijklmn', 'inference').id, 'a');
    assert.equal(authenticateApiKey(loaded.state, 'hashed-key-2', 'inference').id, 'b');
    assert.throws(() => authenticateApiKey(loaded.state, 'plain-key-x-0123456789abcdefghijklmn', 'inference'), (e: unknown) => e instanceof GatewayError && e.status === 401);
    assert.throws(() => authenticateApiKey(loaded.state, undefined, 'inference'), (e: unknown) => e instanceof GatewayError && e.code === 'AIGW_ERR_MISSING_API_KEY');
    assert.throws(() => authenticateApiKey(loaded.state, 'plain-key-1-0123456789abcdefghijklmn', 'admin'), (e: unknown) => e instanceof GatewayError && e.status === 403);
  });

  test('every problem is reported with its path', () => {
    const text = [
      'apiKeys:',
      '  - { id: a }',
      '  - { id: b, key: short }',
      'providers:',
      '  - { slug: "bad slug", provider: openai }',
      'unknownSection: 1',
    ].join('\n');
    const loaded = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(loaded.ok, false);
    if (loaded.ok) return;
    const joined = loaded.errors.join('\n');
    assert.match(joined, /apiKeys\[0\]: exactly one of key or keyHash/);
    assert.match(joined, /apiKeys\[1\]\.key: must be at least 32 characters/);
    assert.match(joined, /providers\[0\]\.slug/);
    assert.match(joined, /unknownSection/);
  });

  test('invalid YAML and duplicates are rejected', () => {
    assert.equal(loadStateFromTexts({ state: 'apiKeys: [ {' }, {}, BUILTIN_GUARDRAIL_COMPILER).ok, false);
    const dup = loadStateFromTexts({ state: 'apiKeys:\n  - { id: a, key: k1234567-0123456789abcdefghijklmn }\n  - { id: a, key: k7654321-0123456789abcdefghijklmn }\n' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(dup.ok, false);
    const sameKey = loadStateFromTexts({ state: 'apiKeys:\n  - { id: a, key: k1234567-0123456789abcdefghijklmn }\n  - { id: b, key: k1234567-0123456789abcdefghijklmn }\n' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(sameKey.ok, false);
  });

  test('an invalid saved config fails the load, named by its id and path', () => {
    const text = 'configs:\n  - { id: good, config: { provider: openai, api_key: sk-1 } }\n  - { id: bad, config: { retry: { attempts: 99 } } }\n';
    const loaded = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(loaded.ok, false);
    if (loaded.ok) return;
    assert.match(loaded.errors.join('\n'), /^configs\.bad\.retry\.attempts: must be at most 5$/m);
  });

  test('credentials from a separate document are merged by slug and id', () => {
    const state = 'apiKeys:\n  - { id: a, keyHash: "sha256:' + '0'.repeat(64) + '" }\nproviders:\n  - { slug: p, provider: openai }\n';
    const credentials = `providers:\n  p: { apiKey: sk-secret }\napiKeys:\n  a: { key: from-secret-1-0123456789abcdefghijkl }\n`;
    const loaded = loadStateFromTexts({ state, credentials }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok);
    assert.equal(loaded.state.providersBySlug.get('p')?.apiKey, 'sk-secret');
    assert.equal(authenticateApiKey(loaded.state, 'from-secret-1-0123456789abcdefghijkl', 'inference').id, 'a');
  });

  test('the content hash changes with either source', () => {
    const a = loadStateFromTexts({ state: 'apiKeys: []' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    const b = loadStateFromTexts({ state: 'apiKeys: []', credentials: 'providers: {}' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(a.ok && b.ok);
    assert.notEqual(a.state.hash, b.state.hash);
  });
});

describe('saved configs with guardrails', () => {
  test('bad guardrail parameters fail the load, with the path', () => {
    const text = [
      'guardrails:',
      '  - { id: g, checks: [ { id: default.wordCount, parameters: { minWords: 1 } } ] }',
      'configs:',
      '  - { id: good, config: { provider: openai, api_key: sk-1, input_guardrails: [g] } }',
      '  - { id: bad, config: { provider: openai, api_key: sk-1, input_guardrails: [ { "default.regexMatch": { rule: "(a+)+$" } } ] } }',
      '  - { id: missing, config: { provider: openai, api_key: sk-1, output_guardrails: [nope] } }',
    ].join('\n');
    const loaded = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(loaded.ok, false);
    if (loaded.ok) return;
    const joined = loaded.errors.join('\n');
    assert.match(joined, /^configs\.bad\.input_guardrails\[0\]/m);
    assert.match(joined, /^configs\.missing\.output_guardrails\[0\]/m);
    assert.doesNotMatch(joined, /configs\.good/);
  });

  test("a saved guardrail's checks are compiled by the engine passed in: unknown ids and bad parameters fail the load", () => {
    const text = [
      'guardrails:',
      '  - { id: g, checks: [ { id: default.regexMatch, parameters: { rule: "(" } }, { id: default.nope, parameters: {} } ] }',
      '  - { id: quiet, async: true, deny: true, checks: [ { id: notNull, parameters: {} } ] }',
    ].join('\n');
    const loaded = loadStateFromTexts({ state: text }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(loaded.ok, false);
    if (loaded.ok) return;
    assert.match(loaded.errors.join('\n'), /^state: guardrails\[1\]\.async: an async guardrail cannot deny/m);
    const fields = loadStateFromTexts({ state: text.split('\n').slice(0, 2).join('\n') }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.equal(fields.ok, false);
    if (fields.ok) return;
    assert.deepEqual(
      fields.errors.map((error) => error.split(' (')[0]),
      ['guardrails[0].checks[0].parameters.rule: is not a valid regular expression', 'guardrails[0].checks[1].id: unknown check "default.nope"'],
    );
    // The engine is what the state floor asks; one that knows no check refuses every id.
    const none = loadStateFromTexts({ state: 'guardrails:\n  - { id: g, checks: [ { id: notNull, parameters: {} } ] }' }, {}, {
      entryIssues: (entry) => entry.checks.map((_, index) => ({ path: ['checks', index, 'id'], message: 'unknown check' })),
      configIssues: () => [],
    });
    assert.deepEqual(none.ok ? [] : none.errors, ['guardrails[0].checks[0].id: unknown check']);
  });
});
