import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeAnswer, encodeAnswer, isCompressed } from '../../../proxy/cache/answer-codec.ts';
import { answerOfSize } from './response-cache-store-suite.ts';

describe('answer codec', () => {
  test('small answers are stored as they are, larger ones gzipped; both decode to the answer', async () => {
    for (const [size, compressed] of [[100, false], [8_000, false], [20_000, true], [200_000, true], [1_500_000, true]] as const) {
      const answer = answerOfSize(size);
      const bytes = await encodeAnswer(answer);
      assert.equal(isCompressed(bytes), compressed, `${size} bytes`);
      assert.deepEqual(await decodeAnswer(bytes), answer);
    }
  });

  test('newlines and JSON in the body and headers survive', async () => {
    const answer = { body: '{"a":"line1\\nline2"}\n\n{"b":1}', createdAt: 42, headers: { 'x-h': 'v\n"quoted"' } };
    assert.deepEqual(await decodeAnswer(await encodeAnswer(answer)), answer);
    assert.deepEqual(await decodeAnswer(await encodeAnswer(answer, 0)), answer);
  });

  test('bytes it did not write decode to undefined', async () => {
    for (const bytes of [Buffer.alloc(0), Buffer.from('x'), Buffer.from('{"c":1}\nbody'), Buffer.from([0x01, 0x7b]), Buffer.from([0x02, 0, 1, 2]), Buffer.from([0x01, ...Buffer.from('{"c":"no"}\nb')])]) {
      assert.equal(await decodeAnswer(bytes), undefined, bytes.toString('hex'));
    }
  });
});
