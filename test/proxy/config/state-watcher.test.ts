// The hot reload reads the sources only for events that may change them. A log written next
// to the state file (the bench harness keeps aigateway.log beside state.yaml) used to make
// every write re-read and hash the state: ≈ 9% of a busy gateway's CPU.
import assert from 'node:assert/strict';
import { watch, type FSWatcher } from 'node:fs';
import { appendFile, mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { touchesSources, watchStateSources, type ReloadOutcome, type StateWatcher } from '../../../proxy/config/state-watcher.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';

// The CommonJS face of node:fs/promises; syncBuiltinESMExports carries a mock to its ESM imports.
const fsPromises = createRequire(import.meta.url)('node:fs/promises') as typeof import('node:fs/promises');

const stateText = (keyId: string): string => `apiKeys:\n  - { id: ${keyId}, key: ${keyId}-key-0123456789abcdefghijklmnop }\n`;

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function keyIdsOf(outcome: ReloadOutcome | undefined): string[] {
  return outcome?.ok === true ? [...outcome.state.apiKeysByDigest.values()].map((key) => key.id) : [];
}

describe('which directory events the state watcher reads the sources for', () => {
  test("a source's own name, a ConfigMap's `..` entries and an unnamed event do; any other file does not", () => {
    const names = new Set(['gateway.yaml', 'credentials.yaml']);
    for (const name of ['gateway.yaml', 'credentials.yaml', '..data', '..data_tmp', '..2026_11_27_18_00_00.123456789', null]) {
      assert.equal(touchesSources(name, names), true, String(name));
    }
    for (const name of ['aigateway.log', 'gateway.yaml.swp', '.gateway.yaml.tmp', 'gateway.yaml~', 'request-logs.sqlite-wal']) {
      assert.equal(touchesSources(name, names), false, name);
    }
    assert.equal(touchesSources(Buffer.from('gateway.yaml'), names), true);
  });
});

describe('the state watcher in a directory with other files', () => {
  let dir: string;
  let watcher: StateWatcher;
  let outcomes: ReloadOutcome[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigw-state-watcher-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const start = (statePath: string, initialHash: string): void => {
    outcomes = [];
    // The poll is an hour away: what reloads here is the directory watch.
    watcher = watchStateSources({
      sources: { statePath },
      env: {},
      guardrailCompiler: BUILTIN_GUARDRAIL_COMPILER,
      initialHash,
      intervalMs: 3_600_000,
      settleMs: 20,
      onReload: (outcome) => outcomes.push(outcome),
    });
  };

  test('writes to a log beside the state file read nothing; a write to the state file reloads it', async (t) => {
    const statePath = join(dir, 'gateway.yaml');
    const logPath = join(dir, 'aigateway.log');
    await writeFile(statePath, stateText('first'));
    start(statePath, 'not-the-hash');
    t.after(() => watcher.close());
    const stat = t.mock.method(fsPromises, 'stat');
    syncBuiltinESMExports();
    t.after(() => {
      t.mock.restoreAll();
      syncBuiltinESMExports();
    });
    // A watch of our own on the same directory: inotify hands an event to every watcher of
    // it in one go, and in order, so once ours has seen a file written after the log, the
    // gateway's has seen the log's writes too.
    let barrierSeen = false;
    const probe: FSWatcher = watch(dir, (_event, name) => {
      if (name === 'barrier.tmp') barrierSeen = true;
    });
    t.after(() => probe.close());
    for (let line = 0; line < 5; line++) await appendFile(logPath, `line ${line}\n`);
    await writeFile(join(dir, 'barrier.tmp'), '');
    await until('the writes to be seen', () => barrierSeen);
    await nextTurn();
    assert.equal(stat.mock.callCount(), 0, 'the sources were read for a log write');
    assert.equal(outcomes.length, 0);

    await writeFile(statePath, stateText('second'));
    await until('the reload', () => outcomes.length > 0);
    assert.deepEqual(keyIdsOf(outcomes.at(-1)), ['second']);
  });

  test("a ConfigMap's swap of its `..data` link reloads, with nothing written to the file's own name", async (t) => {
    const mount = join(dir, 'configmap');
    await mkdir(join(mount, '..v1'), { recursive: true });
    await writeFile(join(mount, '..v1', 'gateway.yaml'), stateText('before'));
    await symlink('..v1', join(mount, '..data'));
    await symlink(join('..data', 'gateway.yaml'), join(mount, 'gateway.yaml'));
    start(join(mount, 'gateway.yaml'), 'not-the-hash');
    t.after(() => watcher.close());
    await watcher.check();
    assert.deepEqual(keyIdsOf(outcomes.at(-1)), ['before']);

    // As the kubelet does it: a new timestamped directory, a temporary link, renamed over `..data`.
    await mkdir(join(mount, '..v2'));
    await writeFile(join(mount, '..v2', 'gateway.yaml'), stateText('after'));
    await symlink('..v2', join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
    await until('the reload after the swap', () => keyIdsOf(outcomes.at(-1)).includes('after'));
  });

  test('an editor that saves to a temporary name and renames it into place reloads', async (t) => {
    const statePath = join(dir, 'edited.yaml');
    await writeFile(statePath, stateText('old'));
    start(statePath, 'not-the-hash');
    t.after(() => watcher.close());
    await watcher.check();
    await writeFile(join(dir, '.edited.yaml.tmp'), stateText('saved'));
    await rename(join(dir, '.edited.yaml.tmp'), statePath);
    await until('the reload after the rename', () => keyIdsOf(outcomes.at(-1)).includes('saved'));
  });
});
