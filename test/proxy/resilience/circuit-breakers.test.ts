import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CircuitBreakers, countsAsBreakerFailure, type BreakerTransition } from '../../../proxy/resilience/circuit-breakers.ts';
import { backoffDelayMs, retryableStatus, retryAfterMs } from '../../../proxy/resilience/retry-policy.ts';

const SETTINGS = { failure_threshold: 3, cooldown_interval: 30_000 };

describe('circuit breakers', () => {
  test('closed → open at the threshold → half-open after the cooldown → closed on success', () => {
    let now = 1_000;
    const transitions: BreakerTransition[] = [];
    const breakers = new CircuitBreakers({ now: () => now, onTransition: (t) => transitions.push(t) });
    for (let i = 0; i < 2; i++) {
      assert.ok(breakers.tryPass('t', 'label', SETTINGS));
      breakers.record('t', 'label', SETTINGS, true);
    }
    assert.equal(breakers.stateOf('t'), 'closed');
    assert.ok(breakers.tryPass('t', 'label', SETTINGS));
    breakers.record('t', 'label', SETTINGS, true);
    assert.equal(breakers.stateOf('t'), 'open');
    assert.equal(breakers.tryPass('t', 'label', SETTINGS), false);
    assert.equal(breakers.isAvailable('t', SETTINGS), false);

    now += 29_999;
    assert.equal(breakers.tryPass('t', 'label', SETTINGS), false);
    now += 1;
    assert.equal(breakers.isAvailable('t', SETTINGS), true);
    assert.ok(breakers.tryPass('t', 'label', SETTINGS), 'one trial');
    assert.equal(breakers.stateOf('t'), 'half-open');
    assert.equal(breakers.tryPass('t', 'label', SETTINGS), false, 'only one trial at a time');
    breakers.record('t', 'label', SETTINGS, false);
    assert.equal(breakers.stateOf('t'), 'closed');
    assert.deepEqual(
      transitions.map((t) => `${t.from}>${t.to}`),
      ['closed>open', 'open>half-open', 'half-open>closed'],
    );
  });

  test('a failed trial reopens for another cooldown', () => {
    let now = 0;
    const breakers = new CircuitBreakers({ now: () => now });
    const one = { failure_threshold: 1, cooldown_interval: 30_000 };
    breakers.tryPass('t', 'l', one);
    breakers.record('t', 'l', one, true);
    now = 30_000;
    assert.ok(breakers.tryPass('t', 'l', one));
    breakers.record('t', 'l', one, true);
    assert.equal(breakers.stateOf('t'), 'open');
    now = 59_999;
    assert.equal(breakers.tryPass('t', 'l', one), false);
  });

  test('a success resets the failure count', () => {
    const breakers = new CircuitBreakers();
    for (const failed of [true, true, false, true, true]) {
      breakers.tryPass('t', 'l', SETTINGS);
      breakers.record('t', 'l', SETTINGS, failed);
    }
    assert.equal(breakers.stateOf('t'), 'closed');
  });

  test('a released trial lets the next request try', () => {
    let now = 0;
    const breakers = new CircuitBreakers({ now: () => now });
    const one = { failure_threshold: 1, cooldown_interval: 30_000 };
    breakers.tryPass('t', 'l', one);
    breakers.record('t', 'l', one, true);
    now = 30_000;
    assert.ok(breakers.tryPass('t', 'l', one));
    breakers.release('t');
    assert.ok(breakers.tryPass('t', 'l', one));
  });

  test('memory is bounded: least recently used ids are forgotten', () => {
    const breakers = new CircuitBreakers({ maxEntries: 100 });
    for (let i = 0; i < 1000; i++) breakers.tryPass(`t${i}`, 'l', SETTINGS);
    assert.equal(breakers.size, 100);
  });

  test('what counts as a failure', () => {
    assert.equal(countsAsBreakerFailure(500, SETTINGS, false), true);
    assert.equal(countsAsBreakerFailure(503, SETTINGS, false), true);
    assert.equal(countsAsBreakerFailure(429, SETTINGS, false), false);
    assert.equal(countsAsBreakerFailure(200, SETTINGS, true), true, 'network errors and timeouts count');
    assert.equal(countsAsBreakerFailure(429, { ...SETTINGS, failure_status_codes: [429] }, false), true);
    assert.equal(countsAsBreakerFailure(500, { ...SETTINGS, failure_status_codes: [429] }, false), false);
  });
});

describe('retry policy', () => {
  test('default retry statuses and on_status_codes', () => {
    for (const status of [429, 500, 502, 503, 504]) assert.ok(retryableStatus(status, { attempts: 1 }));
    for (const status of [400, 401, 404, 408, 501]) assert.equal(retryableStatus(status, { attempts: 1 }), false);
    assert.ok(retryableStatus(408, { attempts: 1, on_status_codes: [408] }));
    assert.equal(retryableStatus(500, { attempts: 1, on_status_codes: [408] }), false);
  });

  test('exponential backoff with full jitter, capped', () => {
    assert.equal(backoffDelayMs(0, 100, () => 0.5), 50);
    assert.equal(backoffDelayMs(3, 100, () => 0.5), 400);
    assert.equal(backoffDelayMs(20, 100, () => 0.999), 9990);
    assert.equal(backoffDelayMs(2, 100, () => 0), 0);
  });

  test('retry-after-ms, then retry-after in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    assert.equal(retryAfterMs({ 'retry-after-ms': '1500', 'retry-after': '9' }, now), 1500);
    assert.equal(retryAfterMs({ 'retry-after': '2' }, now), 2000);
    assert.equal(retryAfterMs({ 'retry-after': 'Sun, 22 Nov 2026 12:00:03 GMT' }, now), 3000);
    assert.equal(retryAfterMs({ 'retry-after': 'soon' }, now), undefined);
    assert.equal(retryAfterMs({}, now), undefined);
  });
});
