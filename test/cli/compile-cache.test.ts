// The image's start-up path: bin/warm-compile-cache.js makes a seed per command, and the entry
// copies the one for its command into an empty (or missing) cache directory before anything
// loads, then runs from it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'aigw-compile-cache-'));
after(() => rm(dir, { recursive: true, force: true }));

test('a seed per command, copied into an empty cache directory on start', { timeout: 120_000 }, async () => {
  const seed = join(dir, 'seed');
  await run(process.execPath, [join(ROOT, 'bin/warm-compile-cache.js'), seed], { cwd: ROOT });
  const [tag] = await readdir(join(seed, 'serve'));
  assert.ok(tag !== undefined, 'the serve seed holds a cache');
  const seeded = await readdir(join(seed, 'serve', tag));
  assert.ok(seeded.length > 100, `${seeded.length} compiled modules`);
  assert.ok((await readdir(join(seed, 'operator'))).length > 0, 'the operator has its own seed');

  const cache = join(dir, 'cache'); // an empty mounted volume, as in the chart
  await mkdir(cache);
  const env = { ...process.env, AIGATEWAY_COMPILE_CACHE_SEED: seed, AIGATEWAY_COMPILE_CACHE_DIR: cache };
  const { stdout } = await run(process.execPath, [join(ROOT, 'bin/aigateway.js'), 'validate', join(ROOT, 'bench/aigateway-state.yaml')], {
    cwd: ROOT,
    env: { ...env, BENCH_MOCK_URL: 'http://127.0.0.1:9/v1', BENCH_GATEWAY_KEY: 'gw-compile-cache-test-key-0123456789' },
  });
  assert.match(stdout, /valid/i);
  const copied = await readdir(join(cache, tag));
  for (const file of seeded) assert.ok(copied.includes(file), `${file} copied from the seed`);
});
