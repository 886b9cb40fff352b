import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { FilePolicyStore } from '../../../proxy/ratelimit/policy-store.ts';
import { policyStoreSuite } from './policy-store-suite.ts';

const dir = await mkdtemp(join(tmpdir(), 'aigw-policies-'));
after(() => rm(dir, { recursive: true, force: true }));
let files = 0;
const settle = async (): Promise<void> => undefined;

policyStoreSuite('in memory', async () => ({ store: FilePolicyStore.inMemory(), settle }));
policyStoreSuite('file', async () => ({ store: await FilePolicyStore.open(join(dir, `policies-${files++}.json`)), settle }));

describe('FilePolicyStore on disk', () => {
  const policy = { type: 'tokens', unit: 'rpd', value: 1_000, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] } as const;

  test('what it wrote is there after a restart, in a private file', async () => {
    const path = join(dir, 'restart.json');
    const store = await FilePolicyStore.open(path);
    const created = await store.create({ ...policy, conditions: [...policy.conditions], group_by: [...policy.group_by] });
    const reopened = await FilePolicyStore.open(path);
    assert.deepEqual(await reopened.list(), [created]);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.match(await readFile(path, 'utf8'), new RegExp(created.id));
  });

  test('a corrupt file is an error, never silently emptied', async () => {
    const path = join(dir, 'corrupt.json');
    await writeFile(path, '{"policies": [ {"id": ');
    await assert.rejects(FilePolicyStore.open(path));
    assert.equal(await readFile(path, 'utf8'), '{"policies": [ {"id": ');
  });
});
