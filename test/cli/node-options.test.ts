// The node options aigateway runs with in production (a fixed young generation; see
// docs/performance.md) are the same in the image, in `npm start` and in the benchmark, and
// the image fills its compile-cache seed with them (Node's cache is per flags).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { AIGATEWAY_NODE_OPTIONS } from '../../bench/targets.ts';

const ROOT = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, ROOT), 'utf8');

test('the image, npm start and the bench run aigateway with the same node options', () => {
  const dockerfile = read('Dockerfile');
  const image = /^ENV NODE_OPTIONS="(.+)"$/m.exec(dockerfile)?.[1];
  assert.equal(image, AIGATEWAY_NODE_OPTIONS.join(' '));
  assert.ok(dockerfile.indexOf('ENV NODE_OPTIONS=') < dockerfile.indexOf('warm-compile-cache.js'), 'the seed is made with the runtime options');
  const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts['start'];
  // npm start also turns the console on (docs/console.md); the image leaves it off.
  assert.equal(start, `node ${AIGATEWAY_NODE_OPTIONS.join(' ')} bin/aigateway.js serve --config gateway.example.yaml --console`);
  assert.ok(!/--console/.test(dockerfile.slice(dockerfile.lastIndexOf('CMD '))), 'the image serves without the console');
});
