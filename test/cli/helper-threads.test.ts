// V8's GC and compiler helper threads run below the serving thread (bin/helper-threads.ts): on a
// shared core a full GC's concurrent marker no longer takes 10–20 ms stretches from requests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { yieldHelperThreads } from '../../bin/helper-threads.ts';
import { threadsOf } from '../helpers/threads.ts';

test("V8's helper threads, and only they, go to the nice value asked for; 0 leaves every thread alone", { skip: process.platform !== 'linux' }, () => {
  const helpers = (): number[] => threadsOf(process.pid).filter((thread) => thread.name === 'V8Worker').map((thread) => thread.nice);
  assert.ok(helpers().length > 0, 'this Node names its platform workers V8Worker');
  assert.equal(yieldHelperThreads(0), 0);
  assert.deepEqual([...new Set(helpers())], [0]);

  assert.equal(yieldHelperThreads(7), helpers().length);
  assert.deepEqual([...new Set(helpers())], [7]);
  const main = threadsOf(process.pid).find((thread) => thread.tid === process.pid);
  assert.equal(main?.nice, 0, 'the serving thread keeps its priority');
  assert.ok(threadsOf(process.pid).filter((thread) => thread.name !== 'V8Worker').every((thread) => thread.nice === 0), 'no other thread changed');
});

test('no /proc to read: nothing changes, nothing throws', () => {
  assert.equal(yieldHelperThreads(10, '/nonexistent/task'), 0);
});
