// V8's GC and compiler helper threads run below the serving thread (proxy/thread-priority.ts): on a
// shared core a full GC's concurrent marker no longer takes 10–20 ms stretches from requests.
import assert from 'node:assert/strict';
import { getPriority } from 'node:os';
import { test } from 'node:test';
import { yieldHelperThreads } from '../../proxy/thread-priority.ts';
import { threadsOf } from '../helpers/threads.ts';

test("V8's helper threads, and only they, go to the nice value asked for; 0 leaves every thread alone", { skip: process.platform !== 'linux' || getPriority() > 16 }, () => {
  // Relative to this process's own nice value: a runner started under `nice` must not fail it.
  const base = getPriority();
  const helpers = (): number[] => threadsOf(process.pid).filter((thread) => thread.name === 'V8Worker').map((thread) => thread.nice);
  assert.ok(helpers().length > 0, 'this Node names its platform workers V8Worker');
  assert.equal(yieldHelperThreads(0), 0);
  assert.deepEqual([...new Set(helpers())], [base]);

  assert.equal(yieldHelperThreads(base + 2), helpers().length);
  assert.deepEqual([...new Set(helpers())], [base + 2]);
  const main = threadsOf(process.pid).find((thread) => thread.tid === process.pid);
  assert.equal(main?.nice, base, 'the serving thread keeps its priority');
  assert.ok(threadsOf(process.pid).filter((thread) => thread.name !== 'V8Worker').every((thread) => thread.nice === base), 'no other thread changed');

  // Asked for less than the serving thread's own: the helpers go no higher than it. (Lowering a
  // nice value needs privilege: without it the call changes nothing, which is checked instead.)
  const privileged = process.getuid?.() === 0;
  assert.equal(yieldHelperThreads(1), privileged ? helpers().length : 0);
  assert.deepEqual([...new Set(helpers())], [privileged ? Math.max(1, base) : base + 2]);
});

test('no /proc to read: nothing changes, nothing throws', () => {
  assert.equal(yieldHelperThreads(10, '/nonexistent/task'), 0);
});
