// The committed console/dist is what console/src builds to: the image and the npm package
// ship console/dist, so an edit to the source without `npm run build:console` fails here.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { test } from 'node:test';

const CONSOLE = join(import.meta.dirname, '../../console');

test('console/dist is the build of console/src (run npm run build:console)', { timeout: 60_000 }, async () => {
  const out = await mkdtemp(join(tmpdir(), 'aigw-console-build-'));
  try {
    await promisify(execFile)(process.execPath, [join(CONSOLE, 'build.js')], { env: { ...process.env, CONSOLE_OUT: out } });
    const built = (await readdir(out)).sort();
    assert.deepEqual((await readdir(join(CONSOLE, 'dist'))).sort(), built);
    for (const file of built) {
      assert.ok((await readFile(join(out, file))).equals(await readFile(join(CONSOLE, 'dist', file))), `console/dist/${file} is stale: run npm run build:console`);
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
