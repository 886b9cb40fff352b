import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_MAX_AGE_SECONDS, answerBytes, ttlMsFromMaxAge } from '../../../proxy/cache/response-cache-store.ts';
import { ERROR_CODES, CacheStoreUnavailableError } from '../../../proxy/errors.ts';

describe('response cache store contract', () => {
  test('max_age: absent is 7 days, 0 stores nothing, negative is invalid', () => {
    assert.equal(DEFAULT_MAX_AGE_SECONDS, 604_800);
    assert.equal(ttlMsFromMaxAge(undefined), 604_800_000);
    assert.equal(ttlMsFromMaxAge(60), 60_000);
    assert.equal(ttlMsFromMaxAge(0), 0);
    assert.throws(() => ttlMsFromMaxAge(-1), RangeError);
  });

  test('the unavailable error carries the stable code the gateway knows', () => {
    const error = new CacheStoreUnavailableError('down', { cause: new Error('ECONNREFUSED') });
    assert.equal(error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    assert.ok('AIGW_ERR_STORE_UNAVAILABLE' in ERROR_CODES);
    assert.ok(error.cause instanceof Error);
  });

  test('answerBytes measures body and headers in UTF-8', () => {
    assert.equal(answerBytes({ body: 'é', createdAt: 0 }), 2);
    assert.equal(answerBytes({ body: 'ab', createdAt: 0, headers: { x: 'yz' } }), 5);
  });
});
