import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { modelPattern } from '../../../proxy/guardrails/request-checks.ts';
import { describeCheckTable } from './check-table.ts';

describeCheckTable('default.modelWhitelist', {
  pass: [
    [{ models: ['gpt-4o-mini'] }, { model: 'gpt-4o-mini' }],
    [{ models: ['claude-*', 'gpt-4o*'] }, { model: 'gpt-4o-2024-08-06' }],
    // Without ctx.model the body's model counts.
    [{ models: ['gpt-4o-mini'] }, { text: 'hi' }],
  ],
  fail: [
    [{ models: ['gpt-4o'] }, { model: 'gpt-4o-mini' }],
    [{ models: ['claude-*'] }, { model: 'gpt-4o' }],
  ],
  bad: [
    [{}, '.models: Required'],
    [{ models: [] }, '.models: must not be empty'],
    [{ models: [''] }, '.models[0]: must not be empty'],
  ],
});

describeCheckTable('default.requiredMetadataKeys', {
  pass: [
    [{ metadataKeys: ['team', 'user'] }, { metadata: { team: 'a', user: 'b', extra: 1 } }],
    [{ metadataKeys: ['team', 'user'], operator: 'any' }, { metadata: { user: 'b' } }],
    [{ metadataKeys: ['debug'], operator: 'none' }, { metadata: { user: 'b' } }],
  ],
  fail: [
    [{ metadataKeys: ['team', 'user'] }, { metadata: { team: 'a' } }],
    [{ metadataKeys: ['team'] }, 'no metadata at all'],
    [{ metadataKeys: ['debug'], operator: 'none' }, { metadata: { debug: true } }],
  ],
  bad: [
    [{}, '.metadataKeys: Required'],
    [{ metadataKeys: ['a'], operator: 'most' }, '.operator: must be one of any, all, none'],
  ],
});

describeCheckTable('default.allowedRequestTypes', {
  pass: [
    [{ allowedTypes: ['chat.completions'] }, { text: 'hi', endpoint: 'chat.completions' }],
    [{ blockedTypes: ['embeddings'] }, { text: 'hi', endpoint: 'responses' }],
    [{ allowedTypes: ['completions', 'embeddings'], blockedTypes: ['responses'] }, { text: 'hi', endpoint: 'embeddings' }],
  ],
  fail: [
    [{ allowedTypes: ['chat.completions'] }, { text: 'hi', endpoint: 'embeddings' }],
    [{ blockedTypes: ['completions'] }, { text: 'hi', endpoint: 'completions' }],
  ],
  bad: [
    [{}, ': needs allowedTypes, blockedTypes or both'],
    [{ allowedTypes: ['images'] }, '.allowedTypes[0]: must be one of chat.completions, completions, embeddings, responses'],
    [{ allowedTypes: ['completions'], blockedTypes: ['completions'] }, '.blockedTypes: completions also allowed'],
  ],
});

describe('model patterns', () => {
  it('treats * as any run of characters and everything else literally', () => {
    assert.equal(modelPattern('gpt-4o')('gpt-4o'), true);
    assert.equal(modelPattern('gpt-4o')('gpt-4o-mini'), false);
    assert.equal(modelPattern('*mini')('gpt-4o-mini'), true);
    assert.equal(modelPattern('gpt-*-mini')('gpt-4o-mini'), true);
    assert.equal(modelPattern('gpt-*-mini')('gpt-mini'), false);
    assert.equal(modelPattern('a*b*a')('aba'), true);
    assert.equal(modelPattern('a*b*a')('ab'), false);
    assert.equal(modelPattern('gpt.4')('gpt-4'), false);
  });
});
