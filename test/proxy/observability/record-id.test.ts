import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomRecordId } from '../../../proxy/observability/record-id.ts';

test('record ids are version 4 UUIDs, lower-case, all distinct (across pool refills)', () => {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const seen = new Set<string>();
  for (let index = 0; index < 5000; index++) {
    const id = randomRecordId();
    assert.match(id, uuid);
    assert.ok(!seen.has(id), id);
    seen.add(id);
  }
  // Every hex digit turns up in every free position: the bytes are used, not a fixed pattern.
  for (const position of [0, 7, 9, 15, 20, 35]) assert.equal(new Set([...seen].map((id) => id[position])).size, 16, `position ${position}`);
});
