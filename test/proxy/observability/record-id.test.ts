import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomRecordId } from '../../../proxy/observability/record-id.ts';

test('record ids are version 7 UUIDs, lower-case, all distinct (across pool refills), their random bits used', () => {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const seen = new Set<string>();
  for (let index = 0; index < 5000; index++) {
    const id = randomRecordId(1_700_000_000_000);
    assert.match(id, uuid);
    assert.ok(!seen.has(id), id);
    seen.add(id);
  }
  // Every hex digit turns up in every random position: the bytes are used, not a fixed pattern.
  for (const position of [15, 20, 24, 35]) assert.equal(new Set([...seen].map((id) => id[position])).size, 16, `position ${position}`);
});

test('the first 48 bits are the Unix milliseconds, so ids sort by time', () => {
  const at = Date.UTC(2026, 10, 27, 8, 0, 0, 123);
  const id = randomRecordId(at);
  assert.equal(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16), at);
  const ids = [0, 1, 1_000, 86_400_000, 2 ** 40].map((offset) => randomRecordId(at + offset));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(randomRecordId(2 ** 48 - 1).slice(0, 13), 'ffffffff-ffff');
  assert.equal(randomRecordId(0).slice(0, 13), '00000000-0000');
});
