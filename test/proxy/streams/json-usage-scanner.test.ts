import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonUsageScanner, type ScannedMembers } from '../../../proxy/streams/json-usage-scanner.ts';

/** Runs `text` through a scanner in pieces of `size` bytes; the members and the bytes that came out. */
async function scan(text: string, size: number): Promise<{ members: ScannedMembers; out: string }> {
  let members: ScannedMembers = {};
  const scanner = new JsonUsageScanner((found) => {
    members = found;
  });
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  scanner.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise((resolve) => scanner.on('end', resolve));
  for (let at = 0; at < bytes.length; at += size) scanner.write(bytes.subarray(at, at + size));
  scanner.end();
  await ended;
  return { members, out: Buffer.concat(chunks).toString('utf8') };
}

const ANSWER = JSON.stringify({
  id: 'x',
  model: 'gpt-4o',
  choices: [{ message: { content: 'a "usage": {"total_tokens": 99} and \\"model\\": fake', usage: { total_tokens: 5 } } }],
  data: [{ embedding: [0.1, -0.2], model: 'inner' }],
  usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, details: { cached_tokens: 1 } },
});

test('top-level usage and model are read however the bytes are split, and pass unchanged', async () => {
  for (const size of [1, 2, 3, 7, 64, ANSWER.length]) {
    const { members, out } = await scan(ANSWER, size);
    assert.equal(out, ANSWER, `split ${size}`);
    assert.deepEqual(members, { model: 'gpt-4o', usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, details: { cached_tokens: 1 } } }, `split ${size}`);
  }
});

test('usage last, with no member after it; nested and quoted lookalikes are ignored', async () => {
  const { members } = await scan('{"data":[{"usage":{"total_tokens":1}}],"text":"\\"usage\\":2","usage":{"total_tokens":9}}', 5);
  assert.deepEqual(members, { usage: { total_tokens: 9 } });
});

test('an answer that is not an object, or has no usage, yields nothing', async () => {
  assert.deepEqual((await scan('[{"usage":{"total_tokens":1}}]', 4)).members, {});
  assert.deepEqual((await scan('{"object":"list","data":[]}', 4)).members, {});
});
