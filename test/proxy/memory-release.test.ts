// Idle memory (issue 32): glibc's malloc_trim() through SQLite's extension loader, on a private
// in-memory database that is always closed, every failure quiet; and the quiet-stretch release
// the SQLite log worker runs after its writes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { releaseWhenQuiet, trimMallocArenas } from '../../proxy/memory-release.ts';

type SqliteModule = typeof import('node:sqlite');

function fakeSqlite(loadExtension: () => void, calls: string[]): () => SqliteModule {
  class DatabaseSync {
    constructor(path: string, options: { allowExtension?: boolean }) {
      calls.push(`open ${path} allowExtension=${String(options.allowExtension)}`);
    }
    loadExtension(path: string, entryPoint: string): void {
      calls.push(`load ${path} ${entryPoint}`);
      loadExtension();
    }
    close(): void {
      calls.push('close');
    }
  }
  return () => ({ DatabaseSync }) as unknown as SqliteModule;
}

test('malloc_trim is called through a private in-memory database, closed again', () => {
  const calls: string[] = [];
  assert.equal(trimMallocArenas(fakeSqlite(() => undefined, calls)), true);
  assert.deepEqual(calls, ['open :memory: allowExtension=true', 'load libc.so.6 malloc_trim', 'close']);
});

test('malloc_trim returning 1 (released) reads as an initialisation error: still a success', () => {
  const calls: string[] = [];
  const released = trimMallocArenas(fakeSqlite(() => { throw new Error('error during initialization: '); }, calls));
  assert.equal(released, true);
  assert.equal(calls.at(-1), 'close');
});

test('no glibc (the library or the function is missing) or no SQLite: false, nothing thrown', () => {
  const calls: string[] = [];
  const missing = fakeSqlite(() => { throw new Error('libc.so.6: cannot open shared object file: No such file or directory'); }, calls);
  assert.equal(trimMallocArenas(missing), false);
  assert.equal(calls.at(-1), 'close', 'the database is closed on failure too');
  assert.equal(trimMallocArenas(() => { throw new Error('No such built-in module: node:sqlite'); }), false);
});

test('on Linux with glibc the real call works (Node built SQLite with extension loading)', (t) => {
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  if (process.platform !== 'linux' || header?.glibcVersionRuntime === undefined) {
    t.skip('not glibc');
    return;
  }
  assert.equal(trimMallocArenas(), true);
});

test('quiet release: once after work and two quiet ticks in a row, never while working, never when idle from the start', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let releases = 0;
  const quiet = releaseWhenQuiet({ intervalMs: 1_000, quietTicks: 2, release: () => releases++ });
  t.mock.timers.tick(10_000);
  assert.equal(releases, 0, 'nothing happened: nothing to release');
  for (let second = 0; second < 5; second++) {
    quiet.touch(); // a batch every second
    t.mock.timers.tick(1_000);
  }
  assert.equal(releases, 0, 'never while messages keep coming');
  t.mock.timers.tick(1_000);
  assert.equal(releases, 1, 'two quiet ticks after the last message');
  t.mock.timers.tick(10_000);
  assert.equal(releases, 1, 'once per quiet stretch');
  quiet.touch();
  t.mock.timers.tick(2_000);
  assert.equal(releases, 2, 'armed again by the next message');
  quiet.touch();
  quiet.stop();
  t.mock.timers.tick(10_000);
  assert.equal(releases, 2, 'stopped');
});

test('quiet release: a failing release is swallowed, and the next quiet stretch tries again', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let calls = 0;
  const quiet = releaseWhenQuiet({ release: () => { calls++; throw new Error('no gc'); } });
  quiet.touch();
  t.mock.timers.tick(2_000);
  quiet.touch();
  t.mock.timers.tick(2_000);
  assert.equal(calls, 2);
  quiet.stop();
});
