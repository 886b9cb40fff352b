// Finding 6: a state file emptied or torn by its writer (`cat new > gateway.yaml`, a
// partial write) must never be installed. The last good state keeps serving, the failure
// is logged and counted in aigateway_config_reloads_total{result="failure"}.
import assert from 'node:assert/strict';
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { watchStateSources, type ReloadOutcome } from '../../proxy/config/state-watcher.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const SECOND_KEY = 'gw-second-key-after-reload-0123456789';

let harness: Harness;

before(async () => {
  // The poll is slowed down: each step below calls check() itself.
  harness = await startHarness({ state: baseState(), reloadIntervalMs: 60_000 });
});
after(() => harness.close());

async function status(key: string): Promise<number> {
  const response = await fetch(`${harness.gateway.url}/policies/rate-limits`, { headers: { 'x-gateway-api-key': key } });
  await response.arrayBuffer();
  return response.status;
}

async function reloads(result: 'success' | 'failure'): Promise<number> {
  const metric = await harness.gateway.metrics.configReloads.get();
  return metric.values.find((value) => value.labels['result'] === result)?.value ?? 0;
}

describe('torn state files', () => {
  test('a file truncated in place (empty) is refused; the last good state keeps serving', async () => {
    const failures = await reloads('failure');
    await writeFile(harness.statePath, ''); // what `cat new > state.yaml` leaves for a moment
    await harness.gateway.watcher.check();
    assert.equal(await status(TEST_GATEWAY_KEY), 200);
    assert.equal(await reloads('failure'), failures + 1);
    assert.ok(harness.logs.some((line) => line['msg'] === 'state reload rejected; the last good state keeps serving' && JSON.stringify(line['errors']).includes('empty')));
  });

  test('comments-only, then invalid, then a valid state: the empty one never becomes "last good"', async () => {
    await writeFile(harness.statePath, '# being rewritten\n');
    await harness.gateway.watcher.check();
    await writeFile(harness.statePath, 'apiKeys: [ {');
    await harness.gateway.watcher.check();
    assert.equal(await status(TEST_GATEWAY_KEY), 200, 'still the original state');
    const next = baseState();
    (next['apiKeys'] as unknown[]).push({ id: 'second', key: SECOND_KEY, scopes: ['inference'] });
    await writeFile(harness.statePath, dump(next));
    await harness.gateway.watcher.check();
    assert.equal(await status(SECOND_KEY), 200);
    assert.equal(await status(TEST_GATEWAY_KEY), 200);
  });
});

describe('a writer that replaces the file in place, in two writes', () => {
  test('only the complete document is loaded, never the first half', async () => {
    const statePath = join(harness.dir, 'in-place.yaml');
    const full = dump({
      apiKeys: [
        { id: 'one', key: 'gw-in-place-key-one-0123456789abcdef' },
        { id: 'two', key: 'gw-in-place-key-two-0123456789abcdef' },
      ],
    });
    const cut = full.indexOf('  - id: two');
    const outcomes: ReloadOutcome[] = [];
    const watcher = watchStateSources({ sources: { statePath }, env: {}, guardrailCompiler: BUILTIN_GUARDRAIL_COMPILER, initialHash: 'none', intervalMs: 60_000, settleMs: 300, onReload: (outcome) => outcomes.push(outcome) });
    try {
      // The first half is itself a valid document with one key: loading it would drop "two".
      await writeFile(statePath, full.slice(0, cut));
      const checking = watcher.check();
      await appendFile(statePath, full.slice(cut));
      await checking;
      await watcher.check();
      assert.ok(outcomes.length >= 1);
      for (const outcome of outcomes) {
        assert.ok(outcome.ok, outcome.ok ? '' : outcome.errors.join('; '));
        assert.equal(outcome.state.apiKeysByDigest.size, 2, 'never the half-written document');
      }
    } finally {
      watcher.close();
    }
  });
});
